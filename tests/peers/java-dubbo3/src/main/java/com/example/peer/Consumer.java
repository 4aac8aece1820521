package com.example.peer;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.dubbo.common.URL;
import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ReferenceConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.SslConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;
import org.apache.dubbo.registry.client.InstanceAddressURL;
import org.apache.dubbo.registry.client.migration.MigrationInvoker;
import org.apache.dubbo.rpc.Invoker;
import org.apache.dubbo.rpc.RpcContext;
import org.apache.dubbo.rpc.RpcException;
import org.apache.dubbo.rpc.cluster.ClusterInvoker;
import org.apache.dubbo.rpc.cluster.Directory;
import org.apache.dubbo.rpc.service.GenericException;
import org.apache.dubbo.rpc.service.GenericService;

/**
 * A real Dubbo 3.3 consumer. {@code --mode call} (default) calls one method (typed through the interface when
 * it is on the classpath, else generic {@code $invoke}) REPEAT times with CONCURRENCY threads after WARMUP calls
 * and prints one JSON line: the last result or exception, response attachments, calls/s, p50/p99, errors and the
 * providers that answered. {@code --mode list} subscribes and prints the provider list the consumer ends up with
 * (addresses and URL parameters) as one JSON line once it has stopped changing. {@code --mode watch} subscribes,
 * prints {@code READY}, then the current list as one JSON line for every line read from stdin, until stdin ends.
 * Exit code: 0 result, 1 business exception, 2 RPC or usage error.
 */
public final class Consumer {
    private Consumer() {}

    public static void main(String[] argv) {
        Peer.init();
        int code;
        try {
            code = run(new Args(argv, "registry", "url", "interface", "group", "version", "protocol", "method",
                    "args", "types", "repeat", "concurrency", "warmup", "timeout", "attachment", "generic", "app",
                    "migration", "mode", "stable-ms", "wait-ms", "expect", "retries", "cluster", "loadbalance",
                    "param", "provided-by", "serialization", "check", "batch", "metrics-out", "tracing",
                    "ssl-client-cert", "ssl-client-key", "ssl-client-trust"));
        } catch (Throwable t) {
            Map<String, Object> err = new LinkedHashMap<>();
            err.put("error", String.valueOf(t));
            Peer.line(Json.write(err));
            code = 2;
        }
        System.out.flush();
        // Unregister the consumer (its znode or instance), but never wait long for it.
        Thread stop = new Thread(() -> {
            try {
                DubboBootstrap.getInstance().stop();
            } catch (RuntimeException e) {
                // exiting anyway
            }
        }, "peer-stop");
        stop.setDaemon(true);
        stop.start();
        try {
            stop.join(3000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Runtime.getRuntime().halt(code);
    }

    private static int run(Args a) throws Exception {
        if (a.get("migration") != null) {
            System.setProperty("dubbo.application.service-discovery.migration", a.get("migration"));
        }
        String ifaceName = a.get("interface", DemoService.class.getName());
        Class<?> iface = null;
        if (!a.flag("generic")) {
            try {
                iface = Class.forName(ifaceName);
            } catch (ClassNotFoundException e) {
                iface = null;
            }
        }
        ApplicationConfig app = new ApplicationConfig(a.get("app", "java-dubbo3-consumer"));
        app.setQosEnable(false);
        int qosPort = 0;
        if (a.get("metrics-out") != null) {
            // Prometheus scrapes Dubbo on its QOS port (`GET /metrics`): the same path here.
            qosPort = Peer.port(0);
            app.setQosEnable(true);
            app.setQosPort(qosPort);
            app.setQosAcceptForeignIp(false);
        }
        DubboBootstrap bootstrap = DubboBootstrap.getInstance().application(app);
        if (a.get("metrics-out") != null) {
            bootstrap.metrics(Observability.metrics());
        }
        if (a.flag("tracing")) {
            bootstrap.tracing(Observability.tracing());
        }
        String registry = a.get("registry", "none");
        bootstrap.registry(new RegistryConfig("none".equals(registry) ? RegistryConfig.NO_AVAILABLE : registry));
        if (a.get("ssl-client-cert") != null || a.get("ssl-client-trust") != null) {
            // Dubbo's SslConfig, client side (its consumer uses TLS only with a client certificate).
            SslConfig ssl = new SslConfig();
            ssl.setClientKeyCertChainPath(a.get("ssl-client-cert"));
            ssl.setClientPrivateKeyPath(a.get("ssl-client-key"));
            ssl.setClientTrustCertCollectionPath(a.get("ssl-client-trust"));
            bootstrap.ssl(ssl);
        }

        ReferenceConfig<Object> ref = new ReferenceConfig<>();
        if (iface != null) {
            ref.setInterface(iface);
        } else {
            ref.setInterface(ifaceName);
            ref.setGeneric("true");
        }
        if (a.get("url") != null) {
            ref.setUrl(a.get("url"));
        }
        if (a.get("group") != null) {
            ref.setGroup(a.get("group"));
        }
        if (a.get("version") != null) {
            ref.setVersion(a.get("version"));
        }
        if (a.get("protocol") != null) {
            ref.setProtocol(a.get("protocol"));
        }
        if (a.get("provided-by") != null) {
            ref.setProvidedBy(a.get("provided-by"));
        }
        ref.setTimeout(a.getInt("timeout", 3000));
        ref.setRetries(a.getInt("retries", 2));
        if (a.get("cluster") != null) {
            ref.setCluster(a.get("cluster"));
        }
        if (a.get("loadbalance") != null) {
            ref.setLoadbalance(a.get("loadbalance"));
        }
        ref.setCheck("true".equals(a.get("check", "false")));
        Map<String, String> params = new HashMap<>(a.pairs("param"));
        if (a.get("serialization") != null) {
            params.put("serialization", a.get("serialization"));
        }
        ref.setParameters(params);
        bootstrap.reference(ref);
        bootstrap.start();
        Object proxy = ref.get();

        if ("list".equals(a.get("mode", "call"))) {
            return list(a, ref);
        }
        if ("watch".equals(a.get("mode", "call"))) {
            return watch(ref);
        }
        if ("first-success".equals(a.get("mode", "call"))) {
            return firstSuccess(a, iface, proxy);
        }
        int code = call(a, ref, iface, proxy);
        if (a.get("metrics-out") != null) {
            Observability.scrape(qosPort, a.get("metrics-out"));
        }
        return code;
    }

    // ---------------------------------------------------------------------------------------------
    // --mode list

    private static int list(Args a, ReferenceConfig<Object> ref) throws InterruptedException {
        long stableMs = a.getInt("stable-ms", 2000);
        long deadline = System.currentTimeMillis() + a.getInt("wait-ms", 30000);
        int expect = a.getInt("expect", -1);
        Map<String, Object> last = null;
        long since = System.currentTimeMillis();
        while (true) {
            Map<String, Object> now = snapshot(ref.getInvoker());
            if (!now.equals(last)) {
                last = now;
                since = System.currentTimeMillis();
            }
            int count = ((List<?>) now.get("providers")).size();
            boolean stable = System.currentTimeMillis() - since >= stableMs && (expect < 0 || count == expect);
            if (stable || System.currentTimeMillis() > deadline) {
                Map<String, Object> out = new LinkedHashMap<>(now);
                out.put("stable", stable);
                Peer.line(Json.write(out));
                return stable ? 0 : 2;
            }
            Thread.sleep(100);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // --mode watch: a running consumer's list, on demand (what a consumer that was already running holds).

    private static int watch(ReferenceConfig<Object> ref) throws java.io.IOException {
        System.out.println("READY");
        System.out.flush();
        java.io.BufferedReader in = new java.io.BufferedReader(
                new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8));
        while (in.readLine() != null) {
            Peer.line(Json.write(snapshot(ref.getInvoker())));
        }
        return 0;
    }

    /** What the consumer's directories hold now: the current one, and both sides of a migration invoker. */
    private static Map<String, Object> snapshot(Invoker<?> invoker) {
        Map<String, Object> out = new LinkedHashMap<>();
        if (invoker instanceof MigrationInvoker) {
            MigrationInvoker<?> m = (MigrationInvoker<?>) invoker;
            out.put("migration_step", String.valueOf(m.getMigrationStep()));
            out.put("providers", providers(m.getCurrentAvailableInvoker()));
            out.put("interface_level", providers(m.getInvoker()));
            out.put("application_level", providers(m.getServiceDiscoveryInvoker()));
        } else {
            out.put("providers", providers(invoker));
        }
        return out;
    }

    private static List<Object> providers(Invoker<?> invoker) {
        List<Object> out = new ArrayList<>();
        if (!(invoker instanceof ClusterInvoker)) {
            return out;
        }
        Directory<?> dir = ((ClusterInvoker<?>) invoker).getDirectory();
        if (dir == null) {
            return out;
        }
        List<? extends Invoker<?>> all = dir.getAllInvokers();
        if (all == null) {
            return out;
        }
        Map<String, Object> sorted = new TreeMap<>();
        for (Invoker<?> i : all) {
            URL url = i.getUrl();
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("address", url.getAddress());
            one.put("protocol", url.getProtocol());
            one.put("path", url.getPath());
            one.put("available", i.isAvailable());
            one.put("url", url.toFullString());
            one.put("params", new TreeMap<>(url.getParameters()));
            // A registry's URL keeps the provider's own parameters apart from the consumer's it is merged with.
            one.put("url_class", url.getClass().getSimpleName());
            if (url instanceof InstanceAddressURL) {
                InstanceAddressURL iu = (InstanceAddressURL) url;
                one.put("provider_params", new TreeMap<>(iu.getOriginalParameters()));
                one.put("instance_metadata", new TreeMap<>(iu.getInstance().getMetadata()));
                one.put("revision", iu.getMetadataInfo() == null ? null : iu.getMetadataInfo().getRevision());
            } else if (url.getUrlParam() != null) {
                one.put("provider_params", new TreeMap<>(url.getUrlParam().getParameters()));
            }
            sorted.put(url.toFullString(), one);
        }
        out.addAll(sorted.values());
        return out;
    }

    // ---------------------------------------------------------------------------------------------
    // --mode first-success

    /**
     * Prints {@code READY {}} once subscribed, then calls METHOD (no arguments) every millisecond until one call
     * succeeds, and prints {@code {"first_success_ms": <epoch ms>, "attempts": N, "provider": ...}} (exit 0), or
     * {@code {"error": ...}} after {@code --wait-ms} (exit 2). For measuring how soon a new provider is called.
     */
    private static int firstSuccess(Args a, Class<?> iface, Object proxy) throws Exception {
        String methodName = a.get("method", "whoAmI");
        Map<String, String> attachments = a.pairs("attachment");
        long deadline = System.currentTimeMillis() + a.getInt("wait-ms", 60000);
        Call call;
        if (iface != null) {
            Method m = find(iface, methodName, null, 0);
            call = () -> m.invoke(proxy);
        } else {
            GenericService g = (GenericService) proxy;
            call = () -> g.$invoke(methodName, new String[0], new Object[0]);
        }
        Peer.line("READY {}");
        long attempts = 0;
        while (System.currentTimeMillis() < deadline) {
            attempts++;
            for (Map.Entry<String, String> e : attachments.entrySet()) {
                RpcContext.getClientAttachment().setAttachment(e.getKey(), e.getValue());
            }
            RecordFilter.LAST.remove();
            try {
                Object r = call.run();
                long at = System.currentTimeMillis();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("first_success_ms", at);
                out.put("attempts", attempts);
                out.put("provider", RecordFilter.LAST.get());
                out.put("result", Json.out(r));
                Peer.line(Json.write(out));
                return 0;
            } catch (Throwable t) {
                Thread.sleep(1);
            }
        }
        Map<String, Object> err = new LinkedHashMap<>();
        err.put("error", "no successful call within --wait-ms");
        err.put("attempts", attempts);
        Peer.line(Json.write(err));
        return 2;
    }

    // ---------------------------------------------------------------------------------------------
    // --mode call

    private static int call(Args a, ReferenceConfig<Object> ref, Class<?> iface, Object proxy) throws Exception {
        long timeoutMs = a.getInt("timeout", 3000);
        if (a.get("batch") != null) {
            return batch(a, iface, proxy, timeoutMs);
        }
        String methodName = a.get("method", "sayHello");
        List<?> jsonArgs = (List<?>) Json.parse(a.get("args", "[]"));
        Map<String, String> attachments = a.pairs("attachment");
        Call call = prepare(iface, proxy, methodName, jsonArgs, a.get("types"), timeoutMs);

        int warmup = a.getInt("warmup", 0);
        int repeat = Math.max(1, a.getInt("repeat", 1));
        int concurrency = Math.max(1, a.getInt("concurrency", 1));
        if (warmup > 0) {
            runCalls(call, attachments, warmup, concurrency, null);
        }
        Stats stats = new Stats(repeat);
        long cpuStart = processCpuNanos();
        long start = System.nanoTime();
        runCalls(call, attachments, repeat, concurrency, stats);
        double elapsedS = (System.nanoTime() - start) / 1e9;
        long cpuNanos = processCpuNanos() - cpuStart;

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("interface", ref.getInterface());
        out.put("method", methodName);
        int code = 0;
        Outcome last = stats.last;
        if (last.error == null) {
            out.put("result", Json.out(last.value));
        } else {
            Throwable t = last.error;
            code = (t instanceof RpcException && !((RpcException) t).isBiz()) ? 2 : 1;
            out.put("exception", exception(t));
        }
        out.put("attachments", last.attachments);
        out.put("calls", repeat);
        out.put("errors", stats.errors.get());
        out.put("error_kinds", new TreeMap<>(stats.errorKinds));
        out.put("elapsed_ms", elapsedS * 1000);
        out.put("calls_per_sec", repeat / elapsedS);
        long[] lat = stats.sortedLatencies();
        out.put("p50_ms", pct(lat, 0.50));
        out.put("p99_ms", pct(lat, 0.99));
        // The JVM's CPU time (every thread, user + system) during the measured calls.
        out.put("cpu_us_per_call", cpuNanos / 1e3 / repeat);
        out.put("warmup", warmup);
        out.put("concurrency", concurrency);
        out.put("providers_seen", new TreeMap<>(stats.providers));
        Peer.line(Json.write(out));
        return code;
    }

    /** CPU time of this JVM so far (user + system, every thread), in nanoseconds; -1 when unknown. */
    private static long processCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
        }
        return -1;
    }

    /** One call ready to run: typed through the interface when present, else generic $invoke. */
    private static Call prepare(Class<?> iface, Object proxy, String methodName, List<?> jsonArgs, String typeList,
            long timeoutMs) throws Exception {
        String[] types = typeList == null || typeList.isEmpty() ? null : typeList.split(",");
        if (iface != null) {
            Method m = find(iface, methodName, types, jsonArgs.size());
            Type[] params = m.getGenericParameterTypes();
            Object[] args = new Object[params.length];
            for (int i = 0; i < params.length; i++) {
                args[i] = Json.in(jsonArgs.get(i), params[i]);
            }
            return () -> {
                Object r = m.invoke(proxy, args);
                if (r instanceof CompletableFuture) {
                    r = ((CompletableFuture<?>) r).get(timeoutMs * 3, TimeUnit.MILLISECONDS);
                }
                return r;
            };
        }
        GenericService g = (GenericService) proxy;
        String[] gtypes = types != null ? types : inferTypes(jsonArgs);
        Object[] args = new Object[jsonArgs.size()];
        for (int i = 0; i < args.length; i++) {
            args[i] = Json.in(jsonArgs.get(i), Object.class);
        }
        return () -> g.$invoke(methodName, gtypes, args);
    }

    /**
     * {@code --batch [{"method","args","types","attachments":{..}}, ...]}: each call once, in order, printed as
     * {@code {"batch":[{"method","result" | "exception","attachments"}, ...]}} (one JVM for many comparisons).
     */
    private static int batch(Args a, Class<?> iface, Object proxy, long timeoutMs) throws Exception {
        List<Object> out = new ArrayList<>();
        for (Object o : (List<?>) Json.parse(a.get("batch"))) {
            Map<?, ?> spec = (Map<?, ?>) o;
            String method = String.valueOf(spec.get("method"));
            List<?> args = spec.get("args") == null ? List.of() : (List<?>) spec.get("args");
            Object types = spec.get("types");
            Map<String, String> attachments = new LinkedHashMap<>(a.pairs("attachment"));
            if (spec.get("attachments") instanceof Map) {
                for (Map.Entry<?, ?> e : ((Map<?, ?>) spec.get("attachments")).entrySet()) {
                    attachments.put(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
                }
            }
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("method", method);
            try {
                Call call = prepare(iface, proxy, method, args, types == null ? null : String.valueOf(types),
                        timeoutMs);
                Stats stats = new Stats(1);
                runCalls(call, attachments, 1, 1, stats);
                Outcome last = stats.last;
                if (last.error == null) {
                    one.put("result", Json.out(last.value));
                } else {
                    one.put("exception", exception(last.error));
                }
                one.put("attachments", last.attachments);
                one.put("providers_seen", new TreeMap<>(stats.providers));
            } catch (Exception e) {
                one.put("error", String.valueOf(e));
            }
            out.add(one);
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("batch", out);
        Peer.line(Json.write(result));
        return 0;
    }

    @FunctionalInterface
    private interface Call {
        Object run() throws Exception;
    }

    private static final class Outcome {
        Object value;
        Throwable error;
        Map<String, Object> attachments = new TreeMap<>();
    }

    private static final class Stats {
        final long[] latencies;
        final AtomicInteger next = new AtomicInteger();
        final AtomicLong errors = new AtomicLong();
        final Map<String, Long> errorKinds = new ConcurrentHashMap<>();
        final Map<String, Long> providers = new ConcurrentHashMap<>();
        volatile Outcome last = new Outcome();

        Stats(int n) {
            latencies = new long[n];
        }

        long[] sortedLatencies() {
            long[] l = Arrays.copyOf(latencies, Math.min(next.get(), latencies.length));
            Arrays.sort(l);
            return l;
        }
    }

    private static void runCalls(Call call, Map<String, String> attachments, int n, int concurrency, Stats stats)
            throws Exception {
        AtomicInteger left = new AtomicInteger(n);
        Runnable worker = () -> {
            while (left.getAndDecrement() > 0) {
                Outcome o = new Outcome();
                for (Map.Entry<String, String> e : attachments.entrySet()) {
                    RpcContext.getClientAttachment().setAttachment(e.getKey(), e.getValue());
                }
                RecordFilter.LAST.remove();
                long t0 = System.nanoTime();
                try {
                    o.value = call.run();
                } catch (InvocationTargetException e) {
                    o.error = e.getCause();
                } catch (java.util.concurrent.ExecutionException e) {
                    o.error = e.getCause();
                } catch (Throwable e) {
                    o.error = e;
                }
                long took = System.nanoTime() - t0;
                if (stats == null) {
                    continue;
                }
                stats.latencies[Math.min(stats.next.getAndIncrement(), stats.latencies.length - 1)] = took;
                String remote = RecordFilter.LAST.get();
                RecordFilter.LAST.remove();
                if (remote != null) {
                    stats.providers.merge(remote, 1L, Long::sum);
                }
                Map<String, Object> resp = RpcContext.getClientResponseContext().getObjectAttachments();
                if (resp != null) {
                    for (Map.Entry<String, Object> e : resp.entrySet()) {
                        o.attachments.put(e.getKey(), Json.out(e.getValue()));
                    }
                }
                if (o.error != null) {
                    stats.errors.incrementAndGet();
                    stats.errorKinds.merge(o.error.getClass().getName(), 1L, Long::sum);
                }
                stats.last = o;
            }
        };
        if (concurrency == 1) {
            worker.run();
            return;
        }
        ExecutorService pool = Executors.newFixedThreadPool(concurrency);
        List<Future<?>> fs = new ArrayList<>();
        for (int i = 0; i < concurrency; i++) {
            fs.add(pool.submit(worker));
        }
        for (Future<?> f : fs) {
            f.get();
        }
        pool.shutdown();
    }

    private static double pct(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
        return sorted[i] / 1e6;
    }

    private static Map<String, Object> exception(Throwable t) {
        Map<String, Object> out = new LinkedHashMap<>();
        if (t instanceof GenericException) {
            GenericException g = (GenericException) t;
            out.put("class", g.getExceptionClass());
            out.put("message", g.getExceptionMessage());
            return out;
        }
        out.put("class", t.getClass().getName());
        out.put("message", t.getMessage());
        if (t instanceof RpcException) {
            out.put("code", ((RpcException) t).getCode());
        }
        Object fields = Json.out(t);
        if (fields instanceof Map) {
            for (Map.Entry<?, ?> e : ((Map<?, ?>) fields).entrySet()) {
                out.putIfAbsent(String.valueOf(e.getKey()), e.getValue());
            }
        }
        return out;
    }

    private static Method find(Class<?> iface, String name, String[] types, int argc) throws Exception {
        List<Method> candidates = new ArrayList<>();
        for (Method m : iface.getMethods()) {
            if (!m.getName().equals(name) || m.getParameterCount() != argc) {
                continue;
            }
            if (types != null) {
                boolean same = true;
                Class<?>[] p = m.getParameterTypes();
                for (int i = 0; i < p.length; i++) {
                    same &= p[i].getName().equals(types[i].trim()) || p[i].getSimpleName().equals(types[i].trim());
                }
                if (!same) {
                    continue;
                }
            }
            candidates.add(m);
        }
        if (candidates.size() != 1) {
            throw new IllegalArgumentException(candidates.size() + " methods " + name + " with " + argc
                    + " arguments" + (types == null ? "" : " of types " + Arrays.toString(types))
                    + " in " + iface.getName() + (candidates.isEmpty() ? "" : ": give --types"));
        }
        return candidates.get(0);
    }

    /** Generic call types, as the project's CLI infers them from JSON. */
    private static String[] inferTypes(List<?> args) {
        String[] out = new String[args.size()];
        for (int i = 0; i < out.length; i++) {
            Object v = args.get(i);
            if (v instanceof String) {
                out[i] = "java.lang.String";
            } else if (v instanceof Integer || v instanceof Long) {
                out[i] = "long";
            } else if (v instanceof Number) {
                out[i] = "double";
            } else if (v instanceof Boolean) {
                out[i] = "boolean";
            } else if (v instanceof List) {
                out[i] = "java.util.List";
            } else if (v instanceof Map && ((Map<?, ?>) v).get("class") instanceof String) {
                out[i] = (String) ((Map<?, ?>) v).get("class");
            } else if (v instanceof Map) {
                out[i] = "java.util.Map";
            } else {
                out[i] = "java.lang.Object";
            }
        }
        return out;
    }
}
