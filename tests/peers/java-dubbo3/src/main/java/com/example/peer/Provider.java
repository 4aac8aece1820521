package com.example.peer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import com.example.peer.greet.Greeter;
import com.example.peer.greet.GreeterImpl;
import org.apache.dubbo.common.URL;
import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ProtocolConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.ServiceConfig;
import org.apache.dubbo.config.SslConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;
import org.apache.dubbo.registry.client.ServiceDiscovery;
import org.apache.dubbo.registry.client.ServiceInstance;
import org.apache.dubbo.registry.support.RegistryManager;
import org.apache.dubbo.rpc.model.ApplicationModel;

/**
 * A real Dubbo 3.3 provider: DemoService, EchoService, ProtoService (wrapper / plain protobuf) and the IDL
 * Greeter, over dubbo and tri, registered in ZooKeeper or Nacos (or nowhere). Prints {@code READY <json>}
 * when exported and registered; SIGTERM unregisters and exits.
 */
public final class Provider {
    private Provider() {}

    public static void main(String[] argv) {
        Peer.init();
        try {
            run(argv);
        } catch (Throwable t) {
            t.printStackTrace();
            Peer.line("FAILED " + t);
            Runtime.getRuntime().halt(1);
        }
    }

    private static void run(String[] argv) throws Exception {
        Args a = new Args(argv, "registry", "app", "protocols", "dubbo-port", "tri-port", "group", "version",
                "register-mode", "metadata-type", "metadata-protocol", "metadata-port", "services", "param",
                "app-param", "protocol-param", "tag", "weight", "serialization", "token", "delay", "only-metadata-v2",
                "tracing", "ssl-server-cert", "ssl-server-key", "ssl-server-trust", "ssl-enabled");
        String app = a.get("app", "java-dubbo3-peer");
        Identity.application = app;
        Identity.tag = a.get("tag", "");
        GreeterImpl.identity = Identity::describe;
        GreeterImpl.attachments = Identity::attachments;

        ApplicationConfig appConfig = new ApplicationConfig(app);
        appConfig.setQosEnable(false);
        appConfig.setRegisterMode(a.get("register-mode", "all"));
        appConfig.setMetadataType(a.get("metadata-type", "local"));
        if (a.get("metadata-protocol") != null) {
            appConfig.setMetadataServiceProtocol(a.get("metadata-protocol"));
        }
        if (a.get("only-metadata-v2") != null) {
            appConfig.setOnlyUseMetadataV2(a.flag("only-metadata-v2"));
        }
        int metadataPort = Peer.port(a.getInt("metadata-port", 0));
        appConfig.setMetadataServicePort(metadataPort);
        appConfig.setParameters(new HashMap<>(a.pairs("app-param")));

        DubboBootstrap bootstrap = DubboBootstrap.getInstance().application(appConfig);
        if (a.flag("tracing")) {
            bootstrap.tracing(Observability.tracing());
        }
        String registry = a.get("registry", "none");
        RegistryConfig registryConfig = new RegistryConfig("none".equals(registry) ? RegistryConfig.NO_AVAILABLE : registry);
        bootstrap.registry(registryConfig);

        Map<String, Integer> ports = new LinkedHashMap<>();
        List<ProtocolConfig> protocols = new ArrayList<>();
        for (String name : a.get("protocols", "dubbo,tri").split(",")) {
            int port = Peer.port(a.getInt(name + "-port", 0));
            ProtocolConfig p = new ProtocolConfig(name, port);
            p.setHost("127.0.0.1");
            if (a.get("serialization") != null) {
                p.setSerialization(a.get("serialization"));
            }
            p.setParameters(new HashMap<>(a.pairs("protocol-param")));
            if (a.flag("ssl-enabled")) {
                p.setSslEnabled(true);
            }
            protocols.add(p);
            ports.put(name, port);
        }
        ports.put("metadata", metadataPort);
        bootstrap.protocols(protocols);
        if (a.get("ssl-server-cert") != null) {
            // Dubbo's SslConfig: TLS on every server port; a trust collection makes it mutual.
            SslConfig ssl = new SslConfig();
            ssl.setServerKeyCertChainPath(a.get("ssl-server-cert"));
            ssl.setServerPrivateKeyPath(a.get("ssl-server-key"));
            ssl.setServerTrustCertCollectionPath(a.get("ssl-server-trust"));
            bootstrap.ssl(ssl);
        }

        List<ServiceConfig<?>> services = new ArrayList<>();
        boolean tri = ports.containsKey("tri");
        for (String s : a.get("services", tri ? "demo,echo,proto,greeter" : "demo,echo").split(",")) {
            switch (s) {
                case "demo":
                    services.add(service(a, DemoService.class, new DemoServiceImpl()));
                    break;
                case "echo":
                    services.add(service(a, EchoService.class, new EchoServiceImpl()));
                    break;
                case "proto":
                    services.add(triOnly(a, service(a, ProtoService.class, new ProtoServiceImpl()), protocols));
                    break;
                case "greeter":
                    services.add(triOnly(a, service(a, Greeter.class, new GreeterImpl()), protocols));
                    break;
                default:
                    throw new IllegalArgumentException("unknown service " + s + " (demo, echo, proto, greeter)");
            }
        }
        for (ServiceConfig<?> sc : services) {
            bootstrap.service(sc);
        }

        CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(stop::countDown, "peer-stop"));
        bootstrap.start();

        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("pid", ProcessHandle.current().pid());
        ready.put("host", "127.0.0.1");
        ready.put("application", app);
        ready.put("ports", ports);
        List<Object> exported = new ArrayList<>();
        for (ServiceConfig<?> sc : services) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("interface", sc.getInterface());
            one.put("group", sc.getGroup());
            one.put("version", sc.getVersion());
            List<String> urls = new ArrayList<>();
            for (URL u : sc.getExportedUrls()) {
                urls.add(u.toFullString());
            }
            one.put("urls", urls);
            exported.add(one);
        }
        ready.put("services", exported);
        ready.put("instances", instances());
        Peer.line("READY " + Json.write(ready));
        stop.await();
    }

    private static <T> ServiceConfig<T> service(Args a, Class<T> iface, T impl) {
        ServiceConfig<T> sc = new ServiceConfig<>();
        sc.setInterface(iface);
        sc.setRef(impl);
        if (a.get("group") != null) {
            sc.setGroup(a.get("group"));
        }
        if (a.get("version") != null) {
            sc.setVersion(a.get("version"));
        }
        if (a.get("weight") != null) {
            sc.setWeight(a.getInt("weight", 100));
        }
        if (a.get("token") != null) {
            sc.setToken(a.get("token"));
        }
        if (a.get("delay") != null) {
            sc.setDelay(a.getInt("delay", 0));
        }
        Map<String, String> params = new HashMap<>(a.pairs("param"));
        if (a.get("tag") != null) {
            sc.setTag(a.get("tag"));
        }
        sc.setParameters(params);
        return sc;
    }

    /** Protobuf services are exported over tri only (Dubbo2 cannot carry them). */
    private static <T> ServiceConfig<T> triOnly(Args a, ServiceConfig<T> sc, List<ProtocolConfig> protocols) {
        List<ProtocolConfig> tri = new ArrayList<>();
        for (ProtocolConfig p : protocols) {
            if ("tri".equals(p.getName())) {
                tri.add(p);
            }
        }
        if (tri.isEmpty()) {
            throw new IllegalArgumentException("services proto and greeter need --protocols with tri");
        }
        sc.setProtocols(tri);
        return sc;
    }

    /** The application-level instances this process registered (revision and metadata). */
    private static List<Object> instances() {
        List<Object> out = new ArrayList<>();
        try {
            RegistryManager rm = ApplicationModel.defaultModel().getBeanFactory().getBean(RegistryManager.class);
            if (rm == null) {
                return out;
            }
            for (ServiceDiscovery sd : rm.getServiceDiscoveries()) {
                ServiceInstance si = sd.getLocalInstance();
                if (si == null) {
                    continue;
                }
                Map<String, Object> one = new LinkedHashMap<>();
                one.put("service_name", si.getServiceName());
                one.put("address", si.getAddress());
                one.put("metadata", si.getMetadata());
                // One registry can back more than one service discovery: list each instance once.
                if (!out.contains(one)) {
                    out.add(one);
                }
            }
        } catch (RuntimeException e) {
            Map<String, Object> err = new LinkedHashMap<>();
            err.put("error", e.toString());
            out.add(err);
        }
        return out;
    }
}
