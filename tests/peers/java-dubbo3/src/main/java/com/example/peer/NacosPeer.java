package com.example.peer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Executor;

import com.alibaba.fastjson2.JSONObject;
import com.alibaba.nacos.api.PropertyKeyConst;
import com.alibaba.nacos.api.config.ConfigFactory;
import com.alibaba.nacos.api.config.ConfigService;
import com.alibaba.nacos.api.config.listener.Listener;
import com.alibaba.nacos.api.naming.NamingFactory;
import com.alibaba.nacos.api.naming.NamingService;
import com.alibaba.nacos.api.naming.listener.NamingEvent;
import com.alibaba.nacos.api.naming.pojo.Instance;

/**
 * The official Java nacos-client (gRPC) driven line by line: every stdin line is one JSON command, every answer
 * and event one JSON line on stdout. Prints {@code READY {...}} when connected; ends at EOF or SIGTERM (its
 * ephemeral instances go with its connection).
 *
 * <pre>
 * {"op":"register","service":S,"group":G,"ip":I,"port":P,"metadata":{..},"weight":1,"ephemeral":true,"cluster":C}
 * {"op":"deregister", same fields}                     -> {"op":"deregistered"}
 * {"op":"list","service":S,"group":G}                  -> {"op":"list","instances":[..]}
 * {"op":"subscribe","service":S,"group":G}             -> {"op":"subscribed"}, then {"op":"event",..} per push
 * {"op":"publish","data_id":D,"group":G,"content":C}   -> {"op":"published","ok":true}
 * {"op":"get-config","data_id":D,"group":G}            -> {"op":"config","content":C}
 * {"op":"watch-config","data_id":D,"group":G}          -> {"op":"watching"}, then {"op":"config-changed",..}
 * </pre>
 */
public final class NacosPeer {
    private NacosPeer() {}

    public static void main(String[] argv) throws Exception {
        Peer.init();
        Args a = new Args(argv, "server", "namespace", "username", "password");
        Properties props = new Properties();
        props.setProperty(PropertyKeyConst.SERVER_ADDR, a.get("server", "127.0.0.1:8848"));
        if (a.get("namespace") != null) {
            props.setProperty(PropertyKeyConst.NAMESPACE, a.get("namespace"));
        }
        if (a.get("username") != null) {
            props.setProperty(PropertyKeyConst.USERNAME, a.get("username"));
            props.setProperty(PropertyKeyConst.PASSWORD, a.get("password", ""));
        }
        NamingService naming = NamingFactory.createNamingService(props);
        ConfigService config = null;
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("pid", ProcessHandle.current().pid());
        ready.put("server_status", naming.getServerStatus());
        Peer.line("READY " + Json.write(ready));

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JSONObject cmd = JSONObject.parseObject(line);
            String op = cmd.getString("op");
            Map<String, Object> out = new LinkedHashMap<>();
            try {
                switch (op) {
                    case "register":
                        naming.registerInstance(cmd.getString("service"), group(cmd), instance(cmd));
                        out.put("op", "registered");
                        break;
                    case "deregister":
                        naming.deregisterInstance(cmd.getString("service"), group(cmd), instance(cmd));
                        out.put("op", "deregistered");
                        break;
                    case "list":
                        out.put("op", "list");
                        out.put("instances", instances(naming.getAllInstances(cmd.getString("service"), group(cmd), false)));
                        break;
                    case "subscribe": {
                        String service = cmd.getString("service");
                        naming.subscribe(service, group(cmd), event -> {
                            if (event instanceof NamingEvent) {
                                NamingEvent e = (NamingEvent) event;
                                Map<String, Object> ev = new LinkedHashMap<>();
                                ev.put("op", "event");
                                ev.put("service", service);
                                ev.put("instances", instances(e.getInstances()));
                                Peer.line(Json.write(ev));
                            }
                        });
                        out.put("op", "subscribed");
                        break;
                    }
                    case "publish":
                        config = config != null ? config : ConfigFactory.createConfigService(props);
                        out.put("op", "published");
                        out.put("ok", config.publishConfig(cmd.getString("data_id"), group(cmd), cmd.getString("content")));
                        break;
                    case "get-config":
                        config = config != null ? config : ConfigFactory.createConfigService(props);
                        out.put("op", "config");
                        out.put("content", config.getConfig(cmd.getString("data_id"), group(cmd), 5000));
                        break;
                    case "watch-config": {
                        config = config != null ? config : ConfigFactory.createConfigService(props);
                        String dataId = cmd.getString("data_id");
                        config.addListener(dataId, group(cmd), new Listener() {
                            @Override
                            public Executor getExecutor() {
                                return null;
                            }

                            @Override
                            public void receiveConfigInfo(String content) {
                                Map<String, Object> ev = new LinkedHashMap<>();
                                ev.put("op", "config-changed");
                                ev.put("data_id", dataId);
                                ev.put("content", content);
                                Peer.line(Json.write(ev));
                            }
                        });
                        out.put("op", "watching");
                        break;
                    }
                    default:
                        throw new IllegalArgumentException("unknown op " + op);
                }
            } catch (Exception e) {
                out.clear();
                out.put("op", "error");
                out.put("error", e.toString());
            }
            Peer.line(Json.write(out));
        }
        naming.shutDown();
        if (config != null) {
            config.shutDown();
        }
        Runtime.getRuntime().halt(0);
    }

    private static String group(JSONObject cmd) {
        String g = cmd.getString("group");
        return g == null ? "DEFAULT_GROUP" : g;
    }

    private static Instance instance(JSONObject cmd) {
        Instance i = new Instance();
        i.setIp(cmd.getString("ip") == null ? "127.0.0.1" : cmd.getString("ip"));
        i.setPort(cmd.getIntValue("port"));
        if (cmd.containsKey("weight")) {
            i.setWeight(cmd.getDoubleValue("weight"));
        }
        if (cmd.containsKey("ephemeral")) {
            i.setEphemeral(cmd.getBooleanValue("ephemeral"));
        }
        if (cmd.containsKey("enabled")) {
            i.setEnabled(cmd.getBooleanValue("enabled"));
        }
        if (cmd.containsKey("healthy")) {
            i.setHealthy(cmd.getBooleanValue("healthy"));
        }
        if (cmd.getString("cluster") != null) {
            i.setClusterName(cmd.getString("cluster"));
        }
        JSONObject md = cmd.getJSONObject("metadata");
        if (md != null) {
            Map<String, String> m = new LinkedHashMap<>();
            for (String k : md.keySet()) {
                m.put(k, md.getString(k));
            }
            i.setMetadata(m);
        }
        return i;
    }

    private static List<Object> instances(List<Instance> list) {
        List<Object> out = new ArrayList<>();
        for (Instance i : list) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("ip", i.getIp());
            one.put("port", i.getPort());
            one.put("weight", i.getWeight());
            one.put("healthy", i.isHealthy());
            one.put("enabled", i.isEnabled());
            one.put("ephemeral", i.isEphemeral());
            one.put("cluster", i.getClusterName());
            one.put("service", i.getServiceName());
            one.put("metadata", new TreeMap<>(i.getMetadata()));
            out.add(one);
        }
        return out;
    }
}
