package com.example.peer.greet;

import org.apache.dubbo.rpc.RpcException;

/** The IDL-mode Greeter, on Dubbo's generated Triple stub. */
public class GreeterImpl extends DubboGreeterTriple.GreeterImplBase {
    /** Filled in by the provider: who answers. */
    public static volatile java.util.function.Supplier<String> identity = () -> "?";
    /** Filled in by the provider: the call's attachments. */
    public static volatile java.util.function.Supplier<java.util.Map<String, String>> attachments = java.util.Map::of;

    @Override
    public GreetReply greet(GreetRequest request) {
        return reply("Hello " + request.getName(), request);
    }

    @Override
    public GreetReply fail(GreetRequest request) {
        throw new RpcException(RpcException.BIZ_EXCEPTION, "greet failed: " + request.getName());
    }

    @Override
    public GreetReply slow(GreetRequest request) {
        try {
            Thread.sleep(request.getCount());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return reply("slept " + request.getCount(), request);
    }

    private static GreetReply reply(String message, GreetRequest request) {
        return GreetReply.newBuilder()
                .setMessage(message)
                .setEcho(request)
                .setProvider(identity.get())
                .setBits(GreetBits.of(request))
                .putAllAttachments(attachments.get())
                .build();
    }
}
