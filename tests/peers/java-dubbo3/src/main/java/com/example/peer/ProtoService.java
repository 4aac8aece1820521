package com.example.peer;

import com.example.peer.greet.GreetReply;
import com.example.peer.greet.GreetRequest;

/**
 * A plain Java interface whose methods take and return protobuf messages: Triple sends plain protobuf
 * (no wrapper) on the path /com.example.peer.ProtoService/greet.
 */
public interface ProtoService {
    GreetReply greet(GreetRequest request);
}
