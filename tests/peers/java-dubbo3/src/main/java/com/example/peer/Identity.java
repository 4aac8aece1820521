package com.example.peer;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.dubbo.common.URL;
import org.apache.dubbo.rpc.RpcContext;

/** Who this provider process is, for whoAmI and the attachments it sees. */
final class Identity {
    static volatile String application = "peer";
    static volatile String tag = "";

    private Identity() {}

    /** "APPLICATION@PROTOCOL://HOST:PORT[#TAG]" for the call in progress. */
    static String describe() {
        URL url = RpcContext.getServiceContext().getUrl();
        String where = url == null ? "?" : url.getProtocol() + "://" + url.getAddress();
        return application + "@" + where + (tag.isEmpty() ? "" : "#" + tag);
    }

    /** The current call's attachments (object values as their strings). */
    static Map<String, String> attachments() {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : RpcContext.getServerAttachment().getObjectAttachments().entrySet()) {
            Object v = e.getValue();
            out.put(e.getKey(), v instanceof byte[] ? java.util.Base64.getEncoder().encodeToString((byte[]) v) : String.valueOf(v));
        }
        return out;
    }
}
