package oracle;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.alibaba.fastjson2.JSONArray;
import com.alibaba.fastjson2.JSONObject;
import org.apache.dubbo.common.URL;
import org.apache.dubbo.rpc.Invocation;
import org.apache.dubbo.rpc.Invoker;
import org.apache.dubbo.rpc.RpcInvocation;
import org.apache.dubbo.rpc.cluster.loadbalance.ConsistentHashLoadBalance;
import org.apache.dubbo.rpc.cluster.loadbalance.RandomLoadBalance;
import org.apache.dubbo.rpc.cluster.loadbalance.RoundRobinLoadBalance;

/** Load balancing: {@code AbstractLoadBalance.getWeight}, RoundRobin's sequence, ConsistentHash's choice. */
final class LbOps {
    private LbOps() {}

    /** Exposes the protected {@code getWeight}. */
    private static final class WeightProbe extends RandomLoadBalance {
        int weight(Invoker<?> invoker, Invocation invocation) {
            return getWeight(invoker, invocation);
        }
    }

    private static final WeightProbe PROBE = new WeightProbe();

    static void register(Map<String, Main.Op> ops) {
        ops.put("lb_weight", LbOps::weight);
        ops.put("lb_roundrobin", LbOps::roundRobin);
        ops.put("lb_consistenthash", LbOps::consistentHash);
    }

    static List<Invoker<Object>> invokers(JSONArray urls, String now) {
        List<Invoker<Object>> out = new ArrayList<>(urls.size());
        for (int i = 0; i < urls.size(); i++) {
            String text = urls.getString(i);
            if (now != null) {
                text = withNow(text, Long.parseLong(now));
            }
            out.add(new FixedInvoker(URL.valueOf(text)));
        }
        return out;
    }

    private static final java.util.regex.Pattern NOW = java.util.regex.Pattern.compile("\\$NOW([+-][0-9]+)?");

    /** Replaces {@code $NOW}, {@code $NOW+D} and {@code $NOW-D} by {@code now + D} (epoch ms). */
    static String withNow(String text, long now) {
        java.util.regex.Matcher m = NOW.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            long delta = m.group(1) == null ? 0 : Long.parseLong(m.group(1));
            m.appendReplacement(out, Long.toString(now + delta));
        }
        m.appendTail(out);
        return out.toString();
    }

    static RpcInvocation invocation(JSONObject in) {
        JSONArray args = in.getJSONArray("args");
        Object[] values = args == null ? new Object[0] : new Object[args.size()];
        Class<?>[] types = new Class<?>[values.length];
        for (int i = 0; i < values.length; i++) {
            values[i] = javaValue(args.get(i));
            types[i] = values[i] == null ? Object.class : values[i].getClass();
        }
        String service = in.getString("service");
        return new RpcInvocation(in.getString("method"), service == null ? "com.foo.Greeter" : service, "", types, values);
    }

    /** JSON to the Java value a caller would pass: integers as Integer/Long, decimals as Double. */
    static Object javaValue(Object v) {
        if (v instanceof BigDecimal d) {
            return d.doubleValue();
        }
        if (v instanceof BigInteger b) {
            return b;
        }
        if (v instanceof JSONArray a) {
            List<Object> out = new ArrayList<>(a.size());
            for (Object x : a) {
                out.add(javaValue(x));
            }
            return out;
        }
        return v;
    }

    /** Each invoker's weight for the invocation; "$NOW" in a URL is the current time. */
    private static Object weight(JSONObject in) {
        long t0 = System.currentTimeMillis();
        List<Invoker<Object>> invokers = invokers(in.getJSONArray("urls"), Long.toString(t0));
        RpcInvocation inv = invocation(in);
        List<Integer> weights = new ArrayList<>();
        for (Invoker<Object> i : invokers) {
            weights.add(PROBE.weight(i, inv));
        }
        long t1 = System.currentTimeMillis();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("weights", weights);
        out.put("now_from", t0);
        out.put("now_to", t1);
        return out;
    }

    /** The indices RoundRobin picks for {@code calls} calls in a row (one balancer per case). */
    private static Object roundRobin(JSONObject in) {
        List<Invoker<Object>> invokers = invokers(in.getJSONArray("urls"), null);
        RpcInvocation inv = invocation(in);
        RoundRobinLoadBalance lb = new RoundRobinLoadBalance();
        int calls = in.getIntValue("calls");
        List<Integer> picks = new ArrayList<>(calls);
        URL consumer = URL.valueOf("consumer://127.0.0.1/com.foo.Greeter");
        for (int c = 0; c < calls; c++) {
            picks.add(invokers.indexOf(lb.select(invokers, consumer, inv)));
        }
        return picks;
    }

    /** The index ConsistentHash picks for each argument list (one balancer per case). */
    private static Object consistentHash(JSONObject in) {
        List<Invoker<Object>> invokers = invokers(in.getJSONArray("urls"), null);
        ConsistentHashLoadBalance lb = new ConsistentHashLoadBalance();
        URL consumer = URL.valueOf("consumer://127.0.0.1/com.foo.Greeter");
        JSONArray calls = in.getJSONArray("calls");
        List<Object> picks = new ArrayList<>(calls.size());
        for (int c = 0; c < calls.size(); c++) {
            JSONObject call = new JSONObject();
            call.put("method", in.getString("method"));
            call.put("args", calls.getJSONArray(c));
            try {
                picks.add(invokers.indexOf(lb.select(invokers, consumer, invocation(call))));
            } catch (RuntimeException e) {
                picks.add(Main.error(e));
            }
        }
        return picks;
    }
}
