package com.example.peer;

import org.apache.dubbo.common.constants.CommonConstants;
import org.apache.dubbo.common.extension.Activate;
import org.apache.dubbo.rpc.Filter;
import org.apache.dubbo.rpc.Invocation;
import org.apache.dubbo.rpc.Invoker;
import org.apache.dubbo.rpc.Result;
import org.apache.dubbo.rpc.RpcException;

/** A consumer filter that remembers, per thread, which provider the cluster picked for the last call. */
@Activate(group = CommonConstants.CONSUMER)
public class RecordFilter implements Filter {
    static final ThreadLocal<String> LAST = new ThreadLocal<>();

    @Override
    public Result invoke(Invoker<?> invoker, Invocation invocation) throws RpcException {
        LAST.set(invoker.getUrl().getProtocol() + "://" + invoker.getUrl().getAddress());
        return invoker.invoke(invocation);
    }
}
