package oracle;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

import com.alibaba.fastjson2.JSONObject;
import org.apache.dubbo.common.URL;
import org.apache.dubbo.common.utils.UrlUtils;

/** URL parsing and printing ({@code URL.valueOf}), {@code URL.encode}/{@code decode}, {@code UrlUtils.isMatch}. */
final class UrlOps {
    private UrlOps() {}

    static void register(Map<String, Main.Op> ops) {
        ops.put("url", in -> view(URL.valueOf(in.getString("url"))));
        ops.put("url_codec", UrlOps::codec);
        ops.put("is_match", in -> {
            URL consumer = URL.valueOf(in.getString("consumer"));
            URL provider = URL.valueOf(in.getString("provider"));
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("is_match", Main.guard(() -> UrlUtils.isMatch(consumer, provider)));
            out.put("service_key_match", Main.guard(() -> UrlUtils.isServiceKeyMatch(consumer, provider)));
            return out;
        });
    }

    /** Everything a URL shows: its parts, parameters (sorted) and its printed forms. */
    static Map<String, Object> view(URL u) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("protocol", u.getProtocol());
        out.put("username", u.getUsername());
        out.put("password", u.getPassword());
        out.put("host", u.getHost());
        out.put("port", u.getPort());
        out.put("path", u.getPath());
        out.put("address", u.getAddress());
        out.put("parameters", new TreeMap<>(u.getParameters()));
        out.put("full", Main.guard(u::toFullString));
        out.put("service", Main.guard(u::toServiceString));
        out.put("identity", Main.guard(u::toIdentityString));
        out.put("service_key", Main.guard(u::getServiceKey));
        return out;
    }

    private static Object codec(JSONObject in) {
        String text = in.getString("text");
        Map<String, Object> out = new LinkedHashMap<>();
        String encoded = URL.encode(text);
        out.put("encoded", encoded);
        out.put("round_trip", URL.decode(encoded));
        try {
            out.put("decoded", URL.decode(text));
        } catch (RuntimeException e) {
            out.put("decoded", Main.error(e));
        }
        return out;
    }
}
