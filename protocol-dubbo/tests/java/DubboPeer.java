import com.caucho.hessian.io.Hessian2Input;
import com.caucho.hessian.io.Hessian2Output;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.dubbo.demo.User;

/**
 * A small Dubbo2 provider for the tests: the Dubbo2 framing (16-byte header, request and response
 * bodies, heartbeats, readonly events, status codes) written by hand, every body encoded and
 * decoded by real Java Hessian (Caucho 4.0.38, Debian libhessian-java).
 *
 * Usage: java -cp hessian.jar:classes DubboPeer [--port N] [--service S] [--version V] [--group G]
 *        [--name NAME] [--idle-ms MS]
 * Prints "READY <port>" on stdout once listening on 127.0.0.1.
 *
 * It answers like Java Dubbo 3.3: result flags 3/4/5 with the attachment dubbo=2.0.2 for a
 * "2.0.2" request, status 70 "Not found exported service" when group/path/version do not match,
 * status 40 when the body cannot be decoded. Service methods: see invoke().
 */
public class DubboPeer {
    static String service = "org.apache.dubbo.demo.DemoService";
    static String version = "1.0.0";
    static String group = "";
    static String name = "java-peer";
    static long idleMs = 0;
    static int port = 0;
    static final Set<Conn> conns = ConcurrentHashMap.newKeySet();
    static final AtomicInteger accepted = new AtomicInteger();
    static final AtomicInteger oneways = new AtomicInteger();
    static final AtomicInteger heartbeats = new AtomicInteger();
    static final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r);
        t.setDaemon(true);
        return t;
    });

    public static void main(String[] args) throws Exception {
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--port": port = Integer.parseInt(args[i + 1]); break;
                case "--service": service = args[i + 1]; break;
                case "--version": version = args[i + 1]; break;
                case "--group": group = args[i + 1]; break;
                case "--name": name = args[i + 1]; break;
                case "--idle-ms": idleMs = Long.parseLong(args[i + 1]); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        ServerSocket ss = new ServerSocket();
        ss.setReuseAddress(true);
        ss.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port));
        System.out.println("READY " + ss.getLocalPort());
        System.out.flush();
        // The test kills us by closing stdin (or by killing the process).
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (IOException e) { }
            System.exit(0);
        });
        stdin.setDaemon(true);
        stdin.start();
        while (true) {
            Socket s = ss.accept();
            s.setTcpNoDelay(true);
            accepted.incrementAndGet();
            Conn c = new Conn(s);
            conns.add(c);
            Thread t = new Thread(c::run);
            t.setDaemon(true);
            t.start();
        }
    }

    static final class Conn {
        final Socket socket;
        final OutputStream out;
        volatile long lastRead = System.currentTimeMillis();

        Conn(Socket s) throws IOException {
            socket = s;
            out = s.getOutputStream();
            if (idleMs > 0) {
                Thread idle = new Thread(() -> {
                    while (!socket.isClosed()) {
                        try { Thread.sleep(Math.max(10, idleMs / 4)); } catch (InterruptedException e) { return; }
                        if (System.currentTimeMillis() - lastRead > idleMs) {
                            close();
                        }
                    }
                });
                idle.setDaemon(true);
                idle.start();
            }
        }

        void close() {
            conns.remove(this);
            try { socket.close(); } catch (IOException e) { }
        }

        void send(byte flag, byte status, long id, byte[] body) {
            ByteBuffer h = ByteBuffer.allocate(16 + body.length);
            h.putShort((short) 0xdabb).put(flag).put(status).putLong(id).putInt(body.length).put(body);
            synchronized (this) {
                try {
                    out.write(h.array());
                    out.flush();
                } catch (IOException e) {
                    close();
                }
            }
        }

        void run() {
            try {
                DataInputStream in = new DataInputStream(socket.getInputStream());
                byte[] header = new byte[16];
                while (true) {
                    in.readFully(header);
                    lastRead = System.currentTimeMillis();
                    ByteBuffer h = ByteBuffer.wrap(header);
                    short magic = h.getShort();
                    if (magic != (short) 0xdabb) {
                        close();
                        return;
                    }
                    byte flag = h.get();
                    h.get();
                    long id = h.getLong();
                    int len = h.getInt();
                    byte[] body = new byte[len];
                    in.readFully(body);
                    boolean twoWay = (flag & 0x40) != 0;
                    if ((flag & 0x20) != 0) {
                        heartbeats.incrementAndGet();
                        if (twoWay) {
                            send((byte) 0x22, (byte) 20, id, new byte[] {'N'});
                        }
                        continue;
                    }
                    if ((flag & 0x1f) != 2) {
                        send((byte) 0x02, (byte) 40, id, string("Unexpected serialization id " + (flag & 0x1f)));
                        continue;
                    }
                    if (!twoWay) {
                        oneways.incrementAndGet();
                    }
                    pool.execute(() -> handle(id, body, twoWay));
                }
            } catch (IOException e) {
                close();
            }
        }

        void handle(long id, byte[] body, boolean twoWay) {
            Hessian2Input in = new Hessian2Input(new ByteArrayInputStream(body));
            String path, reqVersion, method, desc;
            Object[] args;
            Map<String, Object> att;
            String dubboVersion;
            try {
                dubboVersion = in.readString();
                path = in.readString();
                reqVersion = in.readString();
                method = in.readString();
                desc = in.readString();
                List<Class<?>> types = parseDesc(desc);
                args = new Object[types.size()];
                for (int i = 0; i < args.length; i++) {
                    args[i] = in.readObject(types.get(i));
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> m = (Map<String, Object>) in.readObject(Map.class);
                att = m == null ? new HashMap<>() : m;
            } catch (Throwable t) {
                if (twoWay) {
                    send((byte) 0x02, (byte) 40, id, string("Fail to decode request due to: " + t));
                }
                return;
            }
            String g = att.get("group") == null ? "" : String.valueOf(att.get("group"));
            String v = reqVersion == null || reqVersion.equals("0.0.0") ? "" : reqVersion;
            boolean isEcho = method.equals("$echo") && desc.equals("Ljava/lang/Object;");
            if (!isEcho && (!path.equals(service) || !v.equals(version) || !g.equals(group))) {
                String key = (g.isEmpty() ? "" : g + "/") + path + (v.isEmpty() ? "" : ":" + v) + ":" + socket.getLocalPort();
                if (twoWay) {
                    send((byte) 0x02, (byte) 70, id, string("Not found exported service: " + key
                        + " in [" + (group.isEmpty() ? "" : group + "/") + service + ":" + version + ":" + socket.getLocalPort()
                        + "], may be version or group mismatch , channel: consumer: " + socket.getRemoteSocketAddress()
                        + " --> provider: " + socket.getLocalSocketAddress()));
                }
                return;
            }
            Object result;
            Throwable thrown = null;
            try {
                result = invoke(method, desc, args, att);
            } catch (NoReply e) {
                return;
            } catch (Throwable t) {
                result = null;
                thrown = t;
            }
            if (!twoWay) {
                return;
            }
            boolean withAttachments = "2.0.2".equals(dubboVersion);
            try {
                ByteArrayOutputStream bos = new ByteArrayOutputStream();
                Hessian2Output out = new Hessian2Output(bos);
                if (thrown != null) {
                    out.writeInt(withAttachments ? 3 : 0);
                    out.writeObject(thrown);
                } else if (result == null) {
                    out.writeInt(withAttachments ? 5 : 2);
                } else {
                    out.writeInt(withAttachments ? 4 : 1);
                    out.writeObject(result);
                }
                if (withAttachments) {
                    Map<String, Object> ra = new HashMap<>();
                    ra.put("dubbo", "2.0.2");
                    ra.put("provider.name", name);
                    out.writeObject(ra);
                }
                out.flush();
                send((byte) 0x02, (byte) 20, id, bos.toByteArray());
            } catch (Throwable t) {
                send((byte) 0x02, (byte) 50, id, string("Failed to send response: " + t));
            }
        }
    }

    static final class NoReply extends RuntimeException { }

    static Object invoke(String method, String desc, Object[] a, Map<String, Object> att) throws Exception {
        switch (method) {
            case "$echo": return a[0];
            case "$invoke": {
                // Generic call: $invoke(String method, String[] types, Object[] args), generic=true.
                if (!"true".equals(String.valueOf(att.get("generic")))) {
                    throw new IllegalStateException("generic attachment missing");
                }
                String[] types = (String[]) a[1];
                Object[] args = (Object[]) a[2];
                return invoke((String) a[0], String.join(",", types), args, att);
            }
            case "sayHello": return "Hello " + a[0];
            case "whoami": return name;
            case "add": return (Integer) a[0] + (Integer) a[1];
            case "addLong": return (Long) a[0] + (Long) a[1];
            case "echo": return a.length == 1 ? a[0] : Arrays.asList(a);
            case "describe": {
                List<String> out = new ArrayList<>();
                for (Object o : a) {
                    out.add(o == null ? "null" : o.getClass().getName() + ":" + o);
                }
                return out;
            }
            case "attachments": {
                Map<String, String> m = new HashMap<>();
                for (Map.Entry<String, Object> e : att.entrySet()) {
                    m.put(e.getKey(), String.valueOf(e.getValue()));
                }
                return m;
            }
            case "sleep": {
                Thread.sleep(((Number) a[0]).longValue());
                return a[0];
            }
            case "hang": throw new NoReply();
            case "getUser": {
                User u = new User((String) a[0], 42);
                u.tags = new ArrayList<>(Arrays.asList("a", "b"));
                u.created = new Date(1700000000000L);
                return u;
            }
            case "echoUser": return a[0];
            case "users": {
                int n = ((Number) a[0]).intValue();
                User shared = new User("shared", 7);
                List<User> l = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    User u = new User("u" + i, i);
                    u.friend = shared;
                    l.add(u);
                }
                return l;
            }
            case "fail": throw new IllegalStateException((String) a[0]);
            case "failWithCause": throw new RuntimeException("outer", new IllegalArgumentException((String) a[0]));
            case "bigString": {
                char[] c = new char[((Number) a[0]).intValue()];
                Arrays.fill(c, 'x');
                return new String(c);
            }
            case "now": return new Date(1700000000000L);
            case "nothing": return null;
            case "oneways": return oneways.get();
            case "accepted": return accepted.get();
            case "heartbeats": return heartbeats.get();
            case "readonly": {
                // Reply first, then tell every consumer that this provider is going away.
                new Thread(() -> {
                    try { Thread.sleep(50); } catch (InterruptedException e) { }
                    for (Conn c : conns) {
                        c.send((byte) (0x80 | 0x20 | 2), (byte) 0, 0, string("R"));
                    }
                }).start();
                return "readonly";
            }
            case "writable": {
                for (Conn c : conns) {
                    c.send((byte) (0x80 | 0x20 | 2), (byte) 0, 0, string("W"));
                }
                return "writable";
            }
            case "dropConnections": {
                new Thread(() -> {
                    try { Thread.sleep(50); } catch (InterruptedException e) { }
                    for (Conn c : new ArrayList<>(conns)) {
                        c.close();
                    }
                }).start();
                return "dropping";
            }
            default: throw new UnsupportedOperationException("no method " + method + "(" + desc + ")");
        }
    }

    static byte[] string(String s) {
        try {
            ByteArrayOutputStream bos = new ByteArrayOutputStream();
            Hessian2Output out = new Hessian2Output(bos);
            out.writeString(s);
            out.flush();
            return bos.toByteArray();
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    static List<Class<?>> parseDesc(String d) throws ClassNotFoundException {
        List<Class<?>> out = new ArrayList<>();
        int i = 0;
        while (i < d.length()) {
            int start = i;
            while (d.charAt(i) == '[') i++;
            char c = d.charAt(i);
            String elem;
            if (c == 'L') {
                int end = d.indexOf(';', i);
                elem = d.substring(start, end + 1);
                i = end + 1;
            } else {
                elem = d.substring(start, i + 1);
                i++;
            }
            out.add(toClass(elem));
        }
        return out;
    }

    static Class<?> toClass(String e) throws ClassNotFoundException {
        switch (e) {
            case "Z": return boolean.class;
            case "B": return byte.class;
            case "C": return char.class;
            case "S": return short.class;
            case "I": return int.class;
            case "J": return long.class;
            case "F": return float.class;
            case "D": return double.class;
            default:
        }
        if (e.startsWith("[")) {
            return Class.forName(e.replace('/', '.'));
        }
        return Class.forName(e.substring(1, e.length() - 1).replace('/', '.'));
    }
}
