package com.example.peer;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.dubbo.config.MetricsConfig;
import org.apache.dubbo.config.TracingConfig;
import org.apache.dubbo.config.nested.AggregationConfig;
import org.apache.dubbo.config.nested.HistogramConfig;
import org.apache.dubbo.config.nested.PropagationConfig;
import org.apache.dubbo.config.nested.SamplingConfig;

/**
 * Dubbo's own metrics (Prometheus) and tracing (W3C over OpenTelemetry) as a deployment turns them on. Needs the
 * jars of the pom's {@code observability} profile, which java-dubbo3.sh adds to runs with --metrics-out/--tracing.
 */
final class Observability {
    private Observability() {}

    /** Every Dubbo metric family on (JVM metrics off: they are not Dubbo's), exported for Prometheus. */
    static MetricsConfig metrics() {
        MetricsConfig m = new MetricsConfig();
        m.setProtocol("prometheus");
        m.setEnableJvm(false);
        m.setEnableRpc(true);
        m.setEnableRegistry(true);
        m.setEnableMetadata(true);
        m.setEnableMetricsInit(true);
        m.setEnableThreadpool(true);
        AggregationConfig agg = new AggregationConfig();
        agg.setEnabled(true);
        m.setAggregation(agg);
        HistogramConfig h = new HistogramConfig();
        h.setEnabled(true);
        m.setHistogram(h);
        return m;
    }

    /** Tracing on, every call sampled, W3C trace context (Dubbo's defaults otherwise). */
    static TracingConfig tracing() {
        TracingConfig t = new TracingConfig();
        t.setEnabled(true);
        SamplingConfig s = new SamplingConfig();
        s.setProbability(1.0f);
        t.setSampling(s);
        PropagationConfig p = new PropagationConfig();
        p.setType("W3C");
        t.setPropagation(p);
        return t;
    }

    /** Reads {@code /metrics} from the QOS port, as a Prometheus server does, into {@code out}. */
    static void scrape(int qosPort, String out) throws IOException {
        HttpURLConnection c = (HttpURLConnection)
                URI.create("http://127.0.0.1:" + qosPort + "/metrics").toURL().openConnection();
        c.setConnectTimeout(5000);
        c.setReadTimeout(10000);
        try (InputStream in = c.getInputStream()) {
            Files.write(Path.of(out), in.readAllBytes());
        } finally {
            c.disconnect();
        }
    }
}
