package com.example.peer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** "--key value" command-line options; a key may repeat. A key given without a value is "true". */
final class Args {
    private final Map<String, List<String>> values = new LinkedHashMap<>();

    Args(String[] argv, String... known) {
        List<String> allowed = List.of(known);
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument: " + a);
            }
            String key = a.substring(2);
            String value;
            int eq = key.indexOf('=');
            if (eq >= 0) {
                value = key.substring(eq + 1);
                key = key.substring(0, eq);
            } else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
                value = argv[++i];
            } else {
                value = "true";
            }
            if (!allowed.contains(key)) {
                throw new IllegalArgumentException("unknown option --" + key + " (known: " + allowed + ")");
            }
            values.computeIfAbsent(key, k -> new ArrayList<>()).add(value);
        }
    }

    String get(String key, String def) {
        List<String> v = values.get(key);
        return v == null ? def : v.get(v.size() - 1);
    }

    String get(String key) {
        return get(key, null);
    }

    int getInt(String key, int def) {
        String v = get(key);
        return v == null ? def : Integer.parseInt(v);
    }

    boolean flag(String key) {
        return "true".equals(get(key, "false"));
    }

    List<String> all(String key) {
        return values.getOrDefault(key, List.of());
    }

    /** Every "k=v" value of a repeatable option, as a map. */
    Map<String, String> pairs(String key) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String kv : all(key)) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("--" + key + " wants k=v, got " + kv);
            }
            out.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return out;
    }
}
