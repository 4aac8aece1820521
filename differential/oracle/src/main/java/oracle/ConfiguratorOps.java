package oracle;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import com.alibaba.fastjson2.JSONArray;
import com.alibaba.fastjson2.JSONObject;
import org.apache.dubbo.common.URL;
import org.apache.dubbo.common.utils.NetUtils;
import org.apache.dubbo.rpc.cluster.Configurator;
import org.apache.dubbo.rpc.cluster.configurator.parser.ConfigParser;

/**
 * Configurators: override URLs ({@code Configurator.toConfigurators}) or a YAML rule
 * ({@code ConfigParser.parseConfigurators}) applied in order to a provider URL; the answer is
 * the resulting URL's {@code toFullString()} and the local address Java compared with.
 */
final class ConfiguratorOps {
    private ConfiguratorOps() {}

    static void register(Map<String, Main.Op> ops) {
        ops.put("configurator", in -> {
            List<URL> urls = new ArrayList<>();
            String yaml = in.getString("yaml");
            if (yaml != null) {
                urls.addAll(ConfigParser.parseConfigurators(yaml));
            } else {
                JSONArray texts = in.getJSONArray("overrides");
                for (int i = 0; i < texts.size(); i++) {
                    urls.add(URL.valueOf(texts.getString(i)));
                }
            }
            URL url = URL.valueOf(in.getString("url"));
            Optional<List<Configurator>> configurators = Configurator.toConfigurators(urls);
            if (configurators.isPresent()) {
                for (Configurator c : configurators.get()) {
                    url = c.configure(url);
                }
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("url", url.toFullString());
            out.put("local_host", NetUtils.getLocalHost());
            return out;
        });
    }
}
