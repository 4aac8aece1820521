package oracle;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Date;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.alibaba.com.caucho.hessian.io.Hessian2Input;
import com.alibaba.com.caucho.hessian.io.Hessian2Output;
import com.alibaba.com.caucho.hessian.io.SerializerFactory;
import com.alibaba.fastjson2.JSONArray;
import com.alibaba.fastjson2.JSONObject;

/**
 * Hessian 2 with Dubbo's hessian-lite, both ways. Values travel as typed JSON ("specs"):
 * {@code {"t": null|bool|int|long|double|date|string|binary|list|map|object|enum|ref|dup, ...}};
 * longs as decimal strings, doubles as the hex of their bits. A view is the same form made from
 * a Java object (maps sorted by key, object fields by name, a cycle back to an enclosing object
 * as {@code {"t":"ref"}}, a lone surrogate as U+FFFD with {@code "lossy": true}).
 */
final class HessianOps {
    private HessianOps() {}

    private static final SerializerFactory FACTORY = new SerializerFactory();

    static void register(Map<String, Main.Op> ops) {
        ops.put("hessian_java_to_rust", in -> {
            Object value = build(in.getJSONObject("value"), null);
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            Hessian2Output out = new Hessian2Output(bytes);
            out.setSerializerFactory(FACTORY);
            out.writeObject(value);
            out.flush();
            // What these bytes mean to Java: its own reader's value (hessian-lite writes -0.0 as
            // the zero shortcut, canonical NaN, ...), not the object it was given.
            Hessian2Input back = new Hessian2Input(new ByteArrayInputStream(bytes.toByteArray()));
            back.setSerializerFactory(FACTORY);
            Map<String, Object> answer = new LinkedHashMap<>();
            answer.put("hex", hex(bytes.toByteArray()));
            answer.put("view", view(back.readObject(), new IdentityHashMap<>()));
            return answer;
        });
        ops.put("hessian_rust_to_java", in -> {
            byte[] bytes = unhex(in.getString("hex"));
            Hessian2Input input = new Hessian2Input(new ByteArrayInputStream(bytes));
            input.setSerializerFactory(FACTORY);
            Object value = input.readObject();
            Map<String, Object> answer = new LinkedHashMap<>();
            answer.put("view", view(value, new IdentityHashMap<>()));
            return answer;
        });
    }

    /** Builds the Java object a spec describes; {@code enclosing} is the object a "ref" means. */
    static Object build(JSONObject spec, Object enclosing) throws Exception {
        String t = spec.getString("t");
        switch (t) {
            case "null":
                return null;
            case "bool":
                return spec.getBooleanValue("v");
            case "int":
                return spec.getIntValue("v");
            case "long":
                return Long.parseLong(spec.getString("v"));
            case "double":
                return Double.longBitsToDouble(Long.parseUnsignedLong(spec.getString("v"), 16));
            case "date":
                return new Date(spec.getLongValue("v"));
            case "string": {
                String s = spec.getString("v");
                JSONArray lone = spec.getJSONArray("lone");
                if (lone != null) {
                    StringBuilder b = new StringBuilder(s);
                    for (int i = lone.size() - 1; i >= 0; i--) {
                        JSONArray at = lone.getJSONArray(i);
                        b.insert(Math.min(at.getIntValue(0), b.length()), (char) at.getIntValue(1));
                    }
                    s = b.toString();
                }
                return s;
            }
            case "binary":
                return unhex(spec.getString("v"));
            case "list": {
                List<Object> items = new ArrayList<>();
                JSONArray a = spec.getJSONArray("items");
                for (int i = 0; i < a.size(); i++) {
                    JSONObject item = a.getJSONObject(i);
                    items.add("dup".equals(item.getString("t")) && i > 0 ? items.get(i - 1) : build(item, enclosing));
                }
                return items;
            }
            case "map": {
                Map<Object, Object> m = new HashMap<>();
                for (Object e : spec.getJSONArray("entries")) {
                    JSONArray kv = (JSONArray) e;
                    m.put(build(kv.getJSONObject(0), enclosing), build(kv.getJSONObject(1), enclosing));
                }
                return m;
            }
            case "enum": {
                Class<?> c = Class.forName(spec.getString("class"));
                for (Object k : c.getEnumConstants()) {
                    if (((Enum<?>) k).name().equals(spec.getString("name"))) {
                        return k;
                    }
                }
                throw new IllegalArgumentException("no constant " + spec.getString("name"));
            }
            case "object": {
                String cls = spec.getString("class");
                JSONArray fields = spec.getJSONArray("fields");
                if (cls.equals("java.math.BigDecimal")) {
                    return new BigDecimal(build(fields.getJSONArray(0).getJSONObject(1), null).toString());
                }
                Class<?> c = Class.forName(cls);
                Object o = c.getDeclaredConstructor().newInstance();
                for (Object f : fields) {
                    JSONArray nv = (JSONArray) f;
                    Field field = c.getField(nv.getString(0));
                    JSONObject v = nv.getJSONObject(1);
                    field.set(o, "ref".equals(v.getString("t")) ? o : build(v, o));
                }
                return o;
            }
            case "ref":
                return enclosing;
            default:
                throw new IllegalArgumentException("unknown spec type " + t);
        }
    }

    /** The typed-JSON view of a Java object. */
    static Object view(Object v, IdentityHashMap<Object, Boolean> path) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        if (v == null) {
            out.put("t", "null");
        } else if (v instanceof Boolean) {
            out.put("t", "bool");
            out.put("v", v);
        } else if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
            out.put("t", "int");
            out.put("v", ((Number) v).intValue());
        } else if (v instanceof Long) {
            out.put("t", "long");
            out.put("v", v.toString());
        } else if (v instanceof Double || v instanceof Float) {
            out.put("t", "double");
            out.put("v", Long.toHexString(Double.doubleToRawLongBits(((Number) v).doubleValue())));
        } else if (v instanceof Date d) {
            out.put("t", "date");
            out.put("v", d.getTime());
        } else if (v instanceof String || v instanceof Character) {
            String s = v.toString();
            StringBuilder clean = new StringBuilder(s.length());
            boolean lossy = false;
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    clean.append(c).append(s.charAt(++i));
                } else if (Character.isSurrogate(c)) {
                    clean.append('\uFFFD');
                    lossy = true;
                } else {
                    clean.append(c);
                }
            }
            out.put("t", "string");
            out.put("v", clean.toString());
            if (lossy) {
                out.put("lossy", true);
            }
        } else if (v instanceof byte[] b) {
            out.put("t", "binary");
            out.put("v", hex(b));
        } else if (v instanceof BigDecimal d) {
            out.put("t", "object");
            out.put("class", "java.math.BigDecimal");
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("t", "string");
            s.put("v", d.toString());
            out.put("fields", List.of(List.of("value", s)));
        } else if (v instanceof Enum<?> e) {
            out.put("t", "object");
            out.put("class", e.getDeclaringClass().getName());
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("t", "string");
            s.put("v", e.name());
            out.put("fields", List.of(List.of("name", s)));
        } else if (path.containsKey(v)) {
            out.put("t", "ref");
        } else {
            path.put(v, Boolean.TRUE);
            try {
                if (v instanceof Collection<?> c) {
                    List<Object> items = new ArrayList<>();
                    for (Object x : c) {
                        items.add(view(x, path));
                    }
                    out.put("t", "list");
                    out.put("items", items);
                } else if (v.getClass().isArray()) {
                    List<Object> items = new ArrayList<>();
                    for (int i = 0; i < Array.getLength(v); i++) {
                        items.add(view(Array.get(v, i), path));
                    }
                    out.put("t", "list");
                    out.put("items", items);
                } else if (v instanceof Map<?, ?> m) {
                    List<List<Object>> entries = new ArrayList<>();
                    for (Map.Entry<?, ?> e : m.entrySet()) {
                        entries.add(List.of(view(e.getKey(), path), view(e.getValue(), path)));
                    }
                    entries.sort(Comparator.comparing(e -> keyText(e.get(0))));
                    out.put("t", "map");
                    out.put("entries", entries);
                } else {
                    List<List<Object>> fields = new ArrayList<>();
                    for (Class<?> c = v.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
                        for (Field f : c.getDeclaredFields()) {
                            if (Modifier.isStatic(f.getModifiers()) || Modifier.isTransient(f.getModifiers())) {
                                continue;
                            }
                            f.setAccessible(true);
                            fields.add(List.of(f.getName(), view(f.get(v), path)));
                        }
                    }
                    fields.sort(Comparator.comparing(f -> (String) f.get(0)));
                    out.put("t", "object");
                    out.put("class", v.getClass().getName());
                    out.put("fields", fields);
                }
            } finally {
                path.remove(v);
            }
        }
        return out;
    }

    /** The sort key of a map key's view: type, '|', the raw value text. */
    @SuppressWarnings("unchecked")
    static String keyText(Object view) {
        Map<String, Object> m = (Map<String, Object>) view;
        Object v = m.get("v");
        return m.get("t") + "|" + (v == null ? "" : v.toString());
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) {
            s.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return s.toString();
    }

    static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s, 2 * i, 2 * i + 2, 16);
        }
        return b;
    }
}
