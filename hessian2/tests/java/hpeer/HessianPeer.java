package hpeer;

import com.caucho.hessian.io.Hessian2Input;
import com.caucho.hessian.io.Hessian2Output;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.IOException;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.*;

/**
 * Test peer for the Rust hessian2 crate, on real Java Hessian (Debian libhessian-java).
 *
 * gen:  prints one line per vector: name TAB exact(0|1) TAB count TAB hex TAB description,
 *       where hex is what Hessian2Output wrote for the values and description is a JSON
 *       array describing what Hessian2Input reads back from those bytes.
 * read: reads lines "name TAB count TAB hex" from stdin, reads count values from each with
 *       Hessian2Input and prints "name TAB description" (or "name TAB ERROR TAB message").
 */
public class HessianPeer {
    private static final StringBuilder OUT = new StringBuilder();

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("gen")) {
            gen();
        } else if (args.length == 1 && args[0].equals("read")) {
            read();
        } else {
            System.err.println("usage: HessianPeer gen|read");
            System.exit(2);
        }
        System.out.write(OUT.toString().getBytes(StandardCharsets.UTF_8));
        System.out.flush();
    }

    // ----- gen -----

    private static void v(String name, boolean exact, Object... values) throws IOException {
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        Hessian2Output out = new Hessian2Output(bos);
        for (Object o : values) {
            out.writeObject(o);
        }
        out.close();
        byte[] bytes = bos.toByteArray();
        OUT.append(name).append('\t').append(exact ? '1' : '0').append('\t').append(values.length)
            .append('\t').append(hex(bytes)).append('\t');
        try {
            OUT.append(describeAll(bytes, values.length));
        } catch (Exception e) {
            OUT.append("ERROR");
        }
        OUT.append('\n');
    }

    private static String repeat(char c, int n) {
        char[] a = new char[n];
        Arrays.fill(a, c);
        return new String(a);
    }

    private static void gen() throws Exception {
        v("null", true, (Object) null);
        v("true", true, true);
        v("false", true, false);
        int[] ints = {Integer.MIN_VALUE, -262145, -262144, -2049, -2048, -17, -16, -1, 0, 1, 47, 48,
            2047, 2048, 262143, 262144, 300, Integer.MAX_VALUE};
        for (int i : ints) {
            v("int:" + i, true, i);
        }
        long[] longs = {Long.MIN_VALUE, -2147483649L, -2147483648L, -262145, -262144, -2049, -2048,
            -9, -8, 0, 1, 15, 16, 2047, 2048, 262143, 262144, 2147483647L, 2147483648L,
            3000000000L, Long.MAX_VALUE};
        for (long l : longs) {
            v("long:" + l, true, l);
        }
        double[] doubles = {0.0, -0.0, 1.0, -1.0, 2.0, 127.0, -128.0, 128.0, -129.0, 32767.0,
            -32768.0, 32768.0, -32769.0, 1.5, 0.5, 0.001, -0.001, 0.1, 12.25, 3.14159,
            2147483.647, -2147483.648, 2147483.648, 1e10, 1e300, 1e-300, Double.MIN_VALUE,
            Double.MAX_VALUE, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY,
            0.30000000000000004, 123456.789, -65.536};
        for (double d : doubles) {
            v("double:" + d, true, d);
        }
        String[] strings = {"", "a", "hello", repeat('x', 31), repeat('x', 32), repeat('x', 1023),
            repeat('x', 1024), repeat('x', 32767), repeat('x', 32768), repeat('x', 32769),
            repeat('x', 65536 + 5), "\u00e9", "\ud83d\ude00", "\u65e5\u672c\u8a9e",
            "a\u0000b\u0001\u001f\u007f", "mixed \u00e9\u4e2d\ud83d\ude00 text"};
        for (int i = 0; i < strings.length; i++) {
            v("string:" + i + ":len" + strings[i].length(), true, strings[i]);
        }
        // A surrogate pair straddling the 32768-unit chunk boundary.
        v("string:pair-at-chunk-end", true, repeat('a', 32767) + "\ud83d\ude00" + "b");
        StringBuilder big = new StringBuilder();
        while (big.length() < 70000) {
            big.append("\u00e9\u4e2d\ud83d\ude00z");
        }
        v("string:unicode-70000", true, big.toString());
        v("char", true, 'c');
        int[] bins = {0, 1, 15, 16, 255, 1023, 1024, 4000, 70000};
        for (int n : bins) {
            byte[] b = new byte[n];
            for (int i = 0; i < n; i++) {
                b[i] = (byte) (i * 7 + 3);
            }
            v("binary:" + n, n < 4000, (Object) b);
        }
        long[] dates = {0L, 1700000000000L, 60000L * 12345, -60000L, -1L, 1700000040000L,
            60000L * Integer.MAX_VALUE, 60000L * Integer.MAX_VALUE + 60000L};
        for (long d : dates) {
            v("date:" + d, true, new Date(d));
        }
        v("list:empty", true, new ArrayList<Object>());
        v("list:1,2", true, new ArrayList<Object>(Arrays.asList(1, 2)));
        v("list:7", true, new ArrayList<Object>(Arrays.asList(1, 2, 3, 4, 5, 6, 7)));
        v("list:8", true, new ArrayList<Object>(Arrays.asList(1, 2, 3, 4, 5, 6, 7, 8)));
        List<Object> hundred = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            hundred.add(i % 3 == 0 ? (Object) ("s" + i) : (Object) (long) i);
        }
        v("list:100-mixed", true, hundred);
        v("list:linked", true, new LinkedList<Object>(Arrays.asList("a", "b")));
        v("list:treeset", true, new TreeSet<Object>(Arrays.asList(3, 1, 2)));
        v("list:nested", true, new ArrayList<Object>(Arrays.asList(
            new ArrayList<Object>(Arrays.asList(1)), new ArrayList<Object>(), "x")));
        v("array:int", true, (Object) new int[] {1, 2, 300});
        v("array:long", true, (Object) new long[] {1L, 5000000000L});
        v("array:double", true, (Object) new double[] {1.5, 0.0});
        v("array:boolean", true, (Object) new boolean[] {true, false});
        v("array:string", true, (Object) new String[] {"a", "b"});
        v("array:object", true, (Object) new Object[] {"a", 1, null});
        v("array:integer", true, (Object) new Integer[] {1, 2});
        v("array:user", true, (Object) new User[] {new User("u", 3)});
        v("array:int2d", true, (Object) new int[][] {{1}, {2, 3}});
        v("array:int-9", true, (Object) new int[] {1, 2, 3, 4, 5, 6, 7, 8, 9});
        Map<Object, Object> m1 = new HashMap<>();
        m1.put("k", "v");
        v("map:k-v", true, m1);
        v("map:empty", true, new HashMap<Object, Object>());
        Map<Object, Object> m2 = new HashMap<>();
        m2.put(1, "one");
        m2.put(2L, "two");
        m2.put("n", null);
        v("map:int-keys", true, m2);
        Map<Object, Object> lhm = new LinkedHashMap<>();
        lhm.put("z", 1);
        lhm.put("a", 2);
        v("map:linked", true, lhm);
        Map<Object, Object> tm = new TreeMap<>();
        tm.put("b", 2);
        tm.put("a", new ArrayList<Object>(Arrays.asList("x")));
        v("map:tree", true, tm);
        Map<Object, Object> nested = new HashMap<>();
        nested.put("inner", m1);
        nested.put("list", new ArrayList<Object>(Arrays.asList(m1.get("k"))));
        v("map:nested", true, nested);
        v("object:user", true, new User("u", 27));
        v("object:user-null-name", true, new User(null, -1));
        v("list:two-users", true, new ArrayList<Object>(Arrays.asList(new User("a", 1), new User("b", 2))));
        User shared = new User("s", 5);
        v("list:shared-ref", false, new ArrayList<Object>(Arrays.asList(shared, shared)));
        Node a = new Node("a");
        Node b = new Node("b");
        a.next = b;
        b.next = a;
        v("object:cycle", true, a);
        Node self = new Node("self");
        self.next = self;
        v("object:self", true, self);
        List<Object> selfList = new ArrayList<>();
        selfList.add("x");
        selfList.add(selfList);
        v("list:self", true, selfList);
        Map<Object, Object> selfMap = new HashMap<>();
        selfMap.put("me", selfMap);
        v("map:self", true, selfMap);
        v("enum", true, Color.GREEN);
        Holder h = new Holder();
        h.s = -300;
        h.b = -5;
        h.f = 0.1f;
        h.c = '\u00e9';
        h.l = 1L << 40;
        h.d = 2.5;
        h.z = true;
        h.when = new Date(1700000000000L);
        h.data = new byte[] {1, 2, 3};
        h.nums = new int[] {7};
        h.names = new String[] {"n"};
        h.list = new ArrayList<Object>(Arrays.asList(1, "two"));
        h.map = new HashMap<>();
        h.map.put("k", 3.5);
        h.any = new User("in", 1);
        v("object:holder", true, h);
        Holder empty = new Holder();
        v("object:holder-empty", true, empty);
        Object[] ks = {new K0(), new K1(), new K2(), new K3(), new K4(), new K5(), new K6(),
            new K7(), new K8(), new K9(), new K10(), new K11(), new K12(), new K13(), new K14(),
            new K15(), new K16(), new K16(), new K0()};
        v("object:17-classes", true, new ArrayList<Object>(Arrays.asList(ks)));
        v("stream:multi", true, new User("a", 1), "x", new User("b", 2),
            new ArrayList<Object>(Arrays.asList(new User("c", 3))), 7, m1);
        Map<Object, Object> lhm2 = new LinkedHashMap<>(lhm);
        v("stream:type-refs", true, new LinkedList<Object>(Arrays.asList(1)),
            new LinkedList<Object>(Arrays.asList(2)), lhm, lhm2);
        v("stream:shared-across-values", false, lhm, lhm);
        v("exception:runtime", true, new RuntimeException("boom"));
        // Both exceptions share the empty suppressed-exceptions list: Java writes a `Q` the second time.
        v("exception:with-cause", false,
            new IllegalStateException("outer", new IOException("inner")));
    }

    // ----- read -----

    private static void read() throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = r.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] p = line.split("\t");
            OUT.append(p[0]).append('\t');
            try {
                OUT.append(describeAll(unhex(p.length > 2 ? p[2] : ""), Integer.parseInt(p[1])));
            } catch (Throwable e) {
                OUT.append("ERROR\t").append(String.valueOf(e).replace('\n', ' ').replace('\t', ' '));
            }
            OUT.append('\n');
        }
    }

    // ----- describe -----

    private static String describeAll(byte[] bytes, int count) throws IOException {
        Hessian2Input in = new Hessian2Input(new ByteArrayInputStream(bytes));
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < count; i++) {
            Object o = in.readObject();
            if (i > 0) {
                sb.append(',');
            }
            describe(sb, o, new IdentityHashMap<Object, Boolean>());
        }
        if (in.read() != -1) {
            throw new IOException("trailing bytes");
        }
        return sb.append(']').toString();
    }

    private static void describe(StringBuilder sb, Object o, IdentityHashMap<Object, Boolean> path) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof Boolean) {
            sb.append(o);
        } else if (o instanceof Integer || o instanceof Short || o instanceof Byte) {
            sb.append("{\"int\":").append(((Number) o).intValue()).append('}');
        } else if (o instanceof Long) {
            sb.append("{\"long\":").append(o).append('}');
        } else if (o instanceof Double || o instanceof Float) {
            long bits = Double.doubleToRawLongBits(((Number) o).doubleValue());
            sb.append("{\"double\":\"").append(Long.toHexString(bits)).append("\"}");
        } else if (o instanceof Character || o instanceof String) {
            sb.append("{\"string\":");
            str(sb, o.toString());
            sb.append('}');
        } else if (o instanceof Date) {
            sb.append("{\"date\":").append(((Date) o).getTime()).append('}');
        } else if (o instanceof byte[]) {
            sb.append("{\"binary\":\"").append(Base64.getEncoder().encodeToString((byte[]) o)).append("\"}");
        } else if (path.containsKey(o)) {
            sb.append("{\"cycle\":1}");
        } else if (o.getClass().isArray()) {
            path.put(o, true);
            sb.append("{\"list\":[");
            for (int i = 0; i < Array.getLength(o); i++) {
                if (i > 0) {
                    sb.append(',');
                }
                describe(sb, Array.get(o, i), path);
            }
            sb.append("]}");
            path.remove(o);
        } else if (o instanceof Collection) {
            path.put(o, true);
            sb.append("{\"list\":[");
            boolean first = true;
            for (Object x : (Collection<?>) o) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                describe(sb, x, path);
            }
            sb.append("]}");
            path.remove(o);
        } else if (o instanceof Map) {
            path.put(o, true);
            sb.append("{\"map\":[");
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                sb.append('[');
                describe(sb, e.getKey(), path);
                sb.append(',');
                describe(sb, e.getValue(), path);
                sb.append(']');
            }
            sb.append("]}");
            path.remove(o);
        } else if (o instanceof Enum) {
            sb.append("{\"object\":");
            str(sb, ((Enum<?>) o).getDeclaringClass().getName());
            sb.append(",\"fields\":{\"name\":{\"string\":");
            str(sb, ((Enum<?>) o).name());
            sb.append("}}}");
        } else {
            path.put(o, true);
            sb.append("{\"object\":");
            str(sb, o.getClass().getName());
            sb.append(",\"fields\":{");
            boolean first = true;
            for (Class<?> c = o.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
                for (Field f : c.getDeclaredFields()) {
                    int mod = f.getModifiers();
                    if (Modifier.isStatic(mod) || Modifier.isTransient(mod)) {
                        continue;
                    }
                    Object val;
                    try {
                        f.setAccessible(true);
                        val = f.get(o);
                    } catch (Exception e) {
                        val = "<inaccessible>";
                    }
                    if (!first) {
                        sb.append(',');
                    }
                    first = false;
                    str(sb, f.getName());
                    sb.append(':');
                    describe(sb, val, path);
                }
            }
            sb.append("}}");
            path.remove(o);
        }
    }

    private static void str(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }

    private static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) {
            sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return sb.toString();
    }

    private static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }
}
