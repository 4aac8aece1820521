package oracle;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.alibaba.fastjson2.JSON;
import com.alibaba.fastjson2.JSONArray;
import com.alibaba.fastjson2.JSONObject;
import com.alibaba.fastjson2.JSONWriter;

/**
 * The oracle's loop: one JSON request per line on stdin, one JSON answer per line on stdout.
 *
 * <p>Request: {@code {"op": NAME, "cases": [INPUT, ...]}}. Answer: {@code {"results": [OUTPUT, ...]}}
 * in the same order, where an input that makes Dubbo throw answers
 * {@code {"error": {"class": ..., "message": ...}}}. {@code {"op": "ping"}} answers
 * {@code {"pong": true}}. Anything Dubbo logs goes to stderr: stdout carries answers only.
 */
public final class Main {
    private Main() {}

    /** One operation: maps one input to one output (or throws). */
    @FunctionalInterface
    public interface Op {
        /** Answers one case. */
        Object apply(JSONObject input) throws Throwable;
    }

    private static final Map<String, Op> OPS = new LinkedHashMap<>();

    private static void registerOps() {
        UrlOps.register(OPS);
        NacosOps.register(OPS);
        LbOps.register(OPS);
        MockOps.register(OPS);
        RouterOps.register(OPS);
        ConfiguratorOps.register(OPS);
        HessianOps.register(OPS);
    }

    public static void main(String[] args) throws Exception {
        // Dubbo logs through JDK logging here (no other backend on the class path): warnings only.
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        root.setLevel(java.util.logging.Level.WARNING);
        for (java.util.logging.Handler h : root.getHandlers()) {
            h.setLevel(java.util.logging.Level.WARNING);
        }
        registerOps();
        PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        // Whatever Dubbo (or anything else) prints must not mix with the answers.
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            String answer;
            try {
                answer = handle(JSON.parseObject(line, com.alibaba.fastjson2.JSONReader.Feature.UseDoubleForDecimals));
            } catch (Throwable t) {
                answer = JSON.toJSONString(Map.of("fatal", String.valueOf(t)));
            }
            answers.println(answer);
            answers.flush();
        }
    }

    private static String handle(JSONObject request) {
        String op = request.getString("op");
        if ("ping".equals(op)) {
            return "{\"pong\":true,\"ops\":" + JSON.toJSONString(new ArrayList<>(OPS.keySet())) + "}";
        }
        Op f = OPS.get(op);
        if (f == null) {
            return JSON.toJSONString(Map.of("fatal", "unknown op " + op));
        }
        JSONArray cases = request.getJSONArray("cases");
        List<Object> results = new ArrayList<>(cases.size());
        for (int i = 0; i < cases.size(); i++) {
            results.add(answer(f, cases.getJSONObject(i)));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("results", results);
        return JSON.toJSONString(out, JSONWriter.Feature.WriteNulls, JSONWriter.Feature.WriteMapNullValue);
    }

    /** Runs one case; an exception is an answer too. */
    static Object answer(Op f, JSONObject input) {
        try {
            return f.apply(input);
        } catch (Throwable t) {
            return error(t);
        }
    }

    /** A value that may throw. */
    @FunctionalInterface
    public interface Part {
        /** Computes the value. */
        Object get() throws Throwable;
    }

    /** The value, or the JSON form of what it threw: one part of an answer failing leaves the others. */
    static Object guard(Part p) {
        try {
            return p.get();
        } catch (Throwable t) {
            return error(t);
        }
    }

    /** The JSON form of an exception: its class and message. */
    static Map<String, Object> error(Throwable t) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("class", t.getClass().getName());
        e.put("message", t.getMessage());
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("error", e);
        return out;
    }
}
