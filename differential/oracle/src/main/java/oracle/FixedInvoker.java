package oracle;

import org.apache.dubbo.common.URL;
import org.apache.dubbo.rpc.AppResponse;
import org.apache.dubbo.rpc.Invocation;
import org.apache.dubbo.rpc.Invoker;
import org.apache.dubbo.rpc.Result;

/** An invoker that only has a URL: what load balancers and routers look at. */
final class FixedInvoker implements Invoker<Object> {
    private final URL url;

    FixedInvoker(URL url) {
        this.url = url;
    }

    @Override
    public Class<Object> getInterface() {
        return Object.class;
    }

    @Override
    public Result invoke(Invocation invocation) {
        return new AppResponse();
    }

    @Override
    public URL getUrl() {
        return url;
    }

    @Override
    public boolean isAvailable() {
        return true;
    }

    @Override
    public void destroy() {}

    @Override
    public String toString() {
        return url.toString();
    }
}
