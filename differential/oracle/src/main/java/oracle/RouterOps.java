package oracle;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.alibaba.fastjson2.JSONArray;
import com.alibaba.fastjson2.JSONObject;
import org.apache.dubbo.common.URL;
import org.apache.dubbo.common.config.configcenter.ConfigChangeType;
import org.apache.dubbo.common.config.configcenter.ConfigChangedEvent;
import org.apache.dubbo.common.utils.Holder;
import org.apache.dubbo.rpc.Invoker;
import org.apache.dubbo.rpc.RpcInvocation;
import org.apache.dubbo.rpc.cluster.router.condition.ConditionStateRouter;
import org.apache.dubbo.rpc.cluster.router.condition.config.ServiceStateRouter;
import org.apache.dubbo.rpc.cluster.router.state.AbstractStateRouter;
import org.apache.dubbo.rpc.cluster.router.state.BitList;
import org.apache.dubbo.rpc.cluster.router.state.TailStateRouter;
import org.apache.dubbo.rpc.cluster.router.tag.TagStateRouter;

/**
 * Routers on a provider list: the 2.x condition rule ({@code ConditionStateRouter}), a 3.x
 * YAML condition rule ({@code ServiceStateRouter}) and the tag router ({@code TagStateRouter},
 * static tags and a YAML rule). The answer is the indices of the providers left, in order.
 */
final class RouterOps {
    private RouterOps() {}

    static void register(Map<String, Main.Op> ops) {
        ops.put("router_condition", in -> {
            URL consumer = URL.valueOf(in.getString("consumer"));
            ConditionStateRouter<Object> router = new ConditionStateRouter<>(
                    URL.valueOf("condition://0.0.0.0/com.foo.Greeter"), in.getString("rule"),
                    in.getBooleanValue("force"), true);
            return route(router, in, consumer);
        });
        ops.put("router_condition_yaml", in -> {
            URL consumer = URL.valueOf(in.getString("consumer"));
            ServiceStateRouter<Object> router = new ServiceStateRouter<>(consumer);
            router.process(new ConfigChangedEvent(consumer.getServiceKey() + ".condition-router", "dubbo",
                    in.getString("yaml"), ConfigChangeType.ADDED));
            return route(router, in, consumer);
        });
        ops.put("router_tag", in -> {
            URL consumer = URL.valueOf(in.getString("consumer"));
            TagStateRouter<Object> router = new TagStateRouter<>(consumer);
            BitList<Invoker<Object>> invokers = invokers(in);
            router.notify(invokers);
            String yaml = in.getString("yaml");
            if (yaml != null) {
                router.process(new ConfigChangedEvent("app.tag-router", "dubbo", yaml, ConfigChangeType.ADDED));
            }
            return route(router, in, consumer);
        });
    }

    static BitList<Invoker<Object>> invokers(JSONObject in) {
        List<Invoker<Object>> list = new ArrayList<>();
        JSONArray urls = in.getJSONArray("providers");
        for (int i = 0; i < urls.size(); i++) {
            list.add(new FixedInvoker(URL.valueOf(urls.getString(i))));
        }
        return new BitList<>(list);
    }

    private static Object route(AbstractStateRouter<Object> router, JSONObject in, URL consumer) {
        router.setNextRouter(TailStateRouter.getInstance());
        BitList<Invoker<Object>> invokers = invokers(in);
        List<Invoker<Object>> original = new ArrayList<>(invokers);
        RpcInvocation inv = LbOps.invocation(in);
        JSONObject attachments = in.getJSONObject("attachments");
        if (attachments != null) {
            for (String k : attachments.keySet()) {
                inv.setAttachment(k, attachments.getString(k));
            }
        }
        BitList<Invoker<Object>> out = router.route(invokers, consumer, inv, false, new Holder<>());
        List<Integer> indices = new ArrayList<>();
        for (Invoker<Object> i : out) {
            indices.add(original.indexOf(i));
        }
        return indices;
    }
}
