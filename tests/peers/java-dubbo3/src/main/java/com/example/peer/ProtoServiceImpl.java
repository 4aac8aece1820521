package com.example.peer;

import com.example.peer.greet.GreetBits;
import com.example.peer.greet.GreetReply;
import com.example.peer.greet.GreetRequest;

/** The provider side of {@link ProtoService}. */
public class ProtoServiceImpl implements ProtoService {
    @Override
    public GreetReply greet(GreetRequest request) {
        return GreetReply.newBuilder()
                .setMessage("Hello " + request.getName() + " (proto interface)")
                .setEcho(request)
                .setProvider(Identity.describe())
                .setBits(GreetBits.of(request))
                .putAllAttachments(Identity.attachments())
                .build();
    }
}
