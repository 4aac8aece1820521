package com.example.peer;

import java.util.LinkedHashMap;
import java.util.Map;

import io.micrometer.tracing.Span;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import org.apache.dubbo.rpc.RpcContext;
import org.apache.dubbo.rpc.model.ApplicationModel;

/**
 * What Dubbo's tracing made of the call in progress: the server span it opened from the caller's W3C
 * {@code traceparent} (trace id, its own span id, the caller's span as parent) next to the raw attachments.
 * Loaded only when {@code traceContext} is called (it needs the jars of the pom's observability profile).
 */
final class TraceProbe {
    private TraceProbe() {}

    static Map<String, Object> current() {
        Map<String, Object> out = new LinkedHashMap<>();
        Object raw = RpcContext.getServerAttachment().getObjectAttachment("traceparent");
        out.put("traceparent", raw == null ? null : String.valueOf(raw));
        Object state = RpcContext.getServerAttachment().getObjectAttachment("tracestate");
        out.put("tracestate", state == null ? null : String.valueOf(state));
        Tracer tracer = ApplicationModel.defaultModel().getBeanFactory().getBean(Tracer.class);
        Span span = tracer == null ? null : tracer.currentSpan();
        if (span != null) {
            TraceContext ctx = span.context();
            out.put("trace_id", ctx.traceId());
            out.put("span_id", ctx.spanId());
            out.put("parent_id", ctx.parentId());
            out.put("sampled", ctx.sampled());
        }
        System.err.println("TRACE " + Json.write(out));
        return out;
    }
}
