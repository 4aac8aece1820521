package oracle;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.LinkedHashMap;
import java.util.Map;

import com.alibaba.fastjson2.JSONObject;
import org.apache.dubbo.common.URL;
import org.apache.dubbo.registry.nacos.NacosRegistry;
import org.apache.dubbo.registry.nacos.NacosServiceName;

/** Nacos service names: {@code NacosServiceName} and the names {@code NacosRegistry} registers and subscribes. */
final class NacosOps {
    private NacosOps() {}

    private static final Method SERVICE_NAME;
    private static final Method COMPATIBLE_NAME;
    private static final Method LEGACY_NAME;
    private static final NacosRegistry REGISTRY;

    static {
        try {
            SERVICE_NAME = NacosRegistry.class.getDeclaredMethod("getServiceName", URL.class, String.class);
            COMPATIBLE_NAME = NacosRegistry.class.getDeclaredMethod("getCompatibleServiceName", URL.class, String.class);
            LEGACY_NAME = NacosRegistry.class.getDeclaredMethod("getLegacySubscribedServiceName", URL.class);
            SERVICE_NAME.setAccessible(true);
            COMPATIBLE_NAME.setAccessible(true);
            LEGACY_NAME.setAccessible(true);
            // The naming methods read no state: an instance without a Nacos connection serves them.
            Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
            Field f = unsafeClass.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            Object unsafe = f.get(null);
            REGISTRY = (NacosRegistry) unsafeClass.getMethod("allocateInstance", Class.class)
                    .invoke(unsafe, NacosRegistry.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static void register(Map<String, Main.Op> ops) {
        ops.put("nacos_name", NacosOps::name);
        ops.put("nacos_url_name", NacosOps::urlName);
    }

    private static Map<String, Object> fields(NacosServiceName n) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("category", n.getCategory());
        out.put("interface", n.getServiceInterface());
        out.put("version", n.getVersion());
        out.put("group", n.getGroup());
        out.put("value", n.getValue());
        out.put("concrete", n.isConcrete());
        return out;
    }

    /** Parses {@code pattern} and {@code concrete}; is the second compatible with the first? */
    private static Object name(JSONObject in) {
        Map<String, Object> out = new LinkedHashMap<>();
        NacosServiceName pattern = null;
        NacosServiceName concrete = null;
        try {
            pattern = new NacosServiceName(in.getString("pattern"));
            out.put("pattern", fields(pattern));
        } catch (RuntimeException e) {
            out.put("pattern", Main.error(e));
        }
        try {
            concrete = new NacosServiceName(in.getString("concrete"));
            out.put("concrete", fields(concrete));
        } catch (RuntimeException e) {
            out.put("concrete", Main.error(e));
        }
        out.put("compatible", pattern != null && concrete != null ? pattern.isCompatible(concrete) : null);
        return out;
    }

    private static Object call(Method m, Object... args) throws Throwable {
        try {
            return m.invoke(REGISTRY, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            return Main.error(e.getCause());
        }
    }

    /** The names of one URL: subscribe name (NacosServiceName(URL)), register names, legacy name. */
    private static Object urlName(JSONObject in) throws Throwable {
        URL url = URL.valueOf(in.getString("url"));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("subscribe", Main.guard(() -> fields(new NacosServiceName(url))));
        out.put("register", Main.guard(() -> call(SERVICE_NAME, url, url.getCategory("providers"))));
        out.put("compatible", Main.guard(() -> call(COMPATIBLE_NAME, url, url.getCategory("providers"))));
        out.put("legacy", Main.guard(() -> call(LEGACY_NAME, url)));
        return out;
    }
}
