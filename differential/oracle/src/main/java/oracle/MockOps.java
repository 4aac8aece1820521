package oracle;

import java.lang.reflect.Array;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.alibaba.fastjson2.JSON;
import com.alibaba.fastjson2.JSONArray;
import com.alibaba.fastjson2.JSONObject;
import com.alibaba.fastjson2.JSONWriter;
import org.apache.dubbo.rpc.cluster.Merger;
import org.apache.dubbo.rpc.cluster.merger.MergerFactory;
import org.apache.dubbo.rpc.model.ApplicationModel;
import org.apache.dubbo.rpc.support.MockInvoker;

/** {@code MockInvoker.parseMockValue} and the built-in result mergers ({@code MergerFactory.getMerger}). */
final class MockOps {
    private MockOps() {}

    private static final MergerFactory MERGERS = new MergerFactory();

    static void register(Map<String, Main.Op> ops) {
        MERGERS.setScopeModel(ApplicationModel.defaultModel());
        ops.put("mock_value", MockOps::mockValue);
        ops.put("merger", MockOps::merge);
    }

    /** A Java class by name: primitives, arrays ({@code int[]}) and classes. */
    static Class<?> classOf(String name) throws ClassNotFoundException {
        if (name.endsWith("[]")) {
            return Array.newInstance(classOf(name.substring(0, name.length() - 2)), 0).getClass();
        }
        switch (name) {
            case "int": return int.class;
            case "long": return long.class;
            case "short": return short.class;
            case "byte": return byte.class;
            case "char": return char.class;
            case "boolean": return boolean.class;
            case "double": return double.class;
            case "float": return float.class;
            case "void": return void.class;
            default: return Class.forName(name);
        }
    }

    /**
     * A value as plain JSON: fastjson2's rendering, except that a {@code char[]} is a list of
     * one-character strings (fastjson2 writes a string) and a set's elements are sorted by their
     * JSON text (a HashSet's order is its hash order).
     */
    static Object jsonView(Object v) {
        if (v == null) {
            return null;
        }
        if (v instanceof Float f) {
            // fastjson2 prints a float's shortest float digits, which read back as another double.
            return f.doubleValue();
        }
        if (v instanceof char[] c) {
            JSONArray a = new JSONArray();
            for (char x : c) {
                a.add(String.valueOf(x));
            }
            return a;
        }
        Object view = JSON.parse(JSON.toJSONString(v, JSONWriter.Feature.WriteNulls,
                JSONWriter.Feature.WriteNonStringKeyAsString));
        if (v instanceof java.util.Set && view instanceof JSONArray a) {
            List<String> sorted = new ArrayList<>();
            for (Object x : a) {
                sorted.add(JSON.toJSONString(x, JSONWriter.Feature.WriteNulls));
            }
            java.util.Collections.sort(sorted);
            JSONArray s = new JSONArray();
            for (String x : sorted) {
                s.add(JSON.parse(x));
            }
            return s;
        }
        return view;
    }

    private static Object mockValue(JSONObject in) throws Throwable {
        String mock = in.getString("mock");
        String type = in.getString("type");
        Object v = type == null
                ? MockInvoker.parseMockValue(mock)
                : MockInvoker.parseMockValue(mock, new Type[] {classOf(type)});
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("value", jsonView(v));
        return out;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Object merge(JSONObject in) throws Throwable {
        Class<?> type = classOf(in.getString("type"));
        Merger merger = MERGERS.getMerger(type);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("merger", merger == null ? null : merger.getClass().getSimpleName());
        if (merger == null) {
            return out;
        }
        JSONArray items = in.getJSONArray("items");
        Object args = Array.newInstance(type, items.size());
        for (int i = 0; i < items.size(); i++) {
            Object item = items.get(i);
            Array.set(args, i, item == null ? null : JSON.parseObject(JSON.toJSONString(item), type));
        }
        out.put("result", jsonView(merger.merge((Object[]) args)));
        return out;
    }
}
