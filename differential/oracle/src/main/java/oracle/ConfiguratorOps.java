package oracle;

import java.util.Map;

final class ConfiguratorOps {
    private ConfiguratorOps() {}

    static void register(Map<String, Main.Op> ops) {}
}
