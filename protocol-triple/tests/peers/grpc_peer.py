#!/usr/bin/env python3
"""Triple/gRPC test peer for protocol-triple, on grpcio (strict gRPC, HTTP/2 only).

usage: grpc_peer.py PORT PROTO_DIR [no-gzip] [tls-cert=PEM tls-key=PEM [tls-client-ca=PEM]]
    PORT 0 = any free port; prints "PORT <n>" when serving. `no-gzip` disables gzip on the
    server (grpc.compression_enabled_algorithms_bitset = identity|deflate), so a gzip-compressed
    request fails with UNIMPLEMENTED "Compression algorithm 'gzip' is disabled".
    `tls-cert`/`tls-key` serve TLS (grpc.ssl_server_credentials, ALPN h2) instead of h2c;
    `tls-client-ca` also requires a client certificate signed by that CA (mutual TLS).

IDL mode: tritest.Greeter and tritest.Other from PROTO_DIR/test.proto, compiled at start-up
with grpcio-tools (no protoc binary).
Wrapper mode (a hand-made emulation of a Java 3.3 plain-interface provider): generic
raw-bytes handlers at /org.apache.dubbo.tritest.DemoService/{method}, decoding
TripleRequestWrapper by hand and Hessian2 with dubbo-ssl-python. It proves framing and wrapper
bytes, not Java fidelity (see protocol-triple/tests/README.md).
"""
import sys
import os
import tempfile
import time
import importlib
from concurrent import futures

import grpc
from grpc_tools import protoc
import grpc_tools

from dubbo_ssl.codec.encoder import Request, Object
from dubbo_ssl.codec.decoder import Response


def compile_protos(proto_dir):
    out = tempfile.mkdtemp(prefix="tri-peer-")
    wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    for f in ["test.proto", "common/types.proto"]:
        rc = protoc.main(["protoc", "-I" + proto_dir, "-I" + wkt, "--python_out=" + out,
                          "--grpc_python_out=" + out, os.path.join(proto_dir, f)])
        if rc != 0:
            raise SystemExit("protoc failed for " + f)
    sys.path.insert(0, out)
    return importlib.import_module("test_pb2"), importlib.import_module("test_pb2_grpc")


# ---- wrapper mode ---------------------------------------------------------------------------

def read_varint(b, i):
    v, shift = 0, 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        if x < 0x80:
            return v, i
        shift += 7


def put_varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def decode_request_wrapper(b):
    """Java's strict decoder: only LEN fields 1..3."""
    st, args, types, i = None, [], [], 0
    while i < len(b):
        key, i = read_varint(b, i)
        field, wire = key >> 3, key & 7
        if wire != 2:
            raise ValueError("unexpect wireType %d" % wire)
        if field not in (1, 2, 3):
            raise ValueError("fieldNum should in (1,2,3)")
        n, i = read_varint(b, i)
        v = bytes(b[i:i + n])
        i += n
        if field == 1:
            st = v.decode()
        elif field == 2:
            args.append(v)
        else:
            types.append(v.decode())
    return st, args, types


def field(num, payload):
    return bytes([num << 3 | 2]) + put_varint(len(payload)) + payload


def response_wrapper(serialize_type, data, type_name):
    out = field(1, serialize_type.encode())
    if data is not None:
        out += field(2, data)
    return out + field(3, type_name.encode())


def hessian(v):
    # A fresh encoder per value (a shared one leaks its class-definition table).
    return bytes(Request({})._encode_single_value(v))


def unhessian(b):
    return Response(bytearray(b)).read_next()


def to_plain(v, cls=None):
    # dubbo-ssl decodes typed objects as plain dicts (the class name is dropped): re-type the
    # top-level value with the declared argType.
    if isinstance(v, dict):
        return Object(cls or "java.util.HashMap", {k: to_plain(x) for k, x in v.items()})
    if isinstance(v, list):
        return [to_plain(x) for x in v]
    return v


def wrapper_handler(method):
    def handle(request, context):
        st, args, types = decode_request_wrapper(request)
        values = [unhessian(a) for a in args]
        if method == "sayHello":
            return response_wrapper(st, hessian("Hello " + values[0]), "java.lang.String")
        if method == "rawRequest":
            return response_wrapper(st, hessian(request.hex()), "java.lang.String")
        if method == "describe":
            text = "%s|%s|%d" % (st, ",".join(types), len(args))
            return response_wrapper(st, hessian(text), "java.lang.String")
        if method == "echo":
            return response_wrapper(st, hessian(to_plain(values[0], types[0] if types else None)), types[0] if types else "java.lang.Object")
        if method == "getUser":
            user = Object("org.apache.dubbo.tritest.User", {"name": values[0], "age": 42})
            return response_wrapper(st, hessian(user), "org.apache.dubbo.tritest.User")
        if method == "nothing":
            return response_wrapper(st, None, "void")
        if method == "boom":
            err = Object("java.lang.IllegalStateException", {"detailMessage": "boom: " + values[0]})
            context.send_initial_metadata((("tri-exception-code", "3"),))
            context.set_code(grpc.StatusCode.UNKNOWN)
            context.set_details("boom: " + values[0])
            return response_wrapper(st, hessian(err), "java.lang.Exception")
        if method == "denied":
            context.send_initial_metadata((("tri-exception-code", "7"),))
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "no access for you")
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "no method " + method)
    return handle


BOUND = [0]
WRAPPER_METHODS = ["sayHello", "rawRequest", "describe", "echo", "getUser", "nothing", "boom", "denied"]


def main():
    port, proto_dir = int(sys.argv[1]), sys.argv[2]
    flags = sys.argv[3:]
    no_gzip = "no-gzip" in flags
    tls = dict(f.split("=", 1) for f in flags if "=" in f)
    pb2, pb2_grpc = compile_protos(proto_dir)

    class Greeter(pb2_grpc.GreeterServicer):
        def SayHello(self, request, context):
            if request.name.startswith("gzip"):
                context.set_compression(grpc.Compression.Gzip)
            return pb2.HelloReply(message="Hello " + request.name)

        def Echo(self, request, context):
            return request

        def Fail(self, request, context):
            context.abort(grpc.StatusCode(_code(request.code)), request.message)

        def Slow(self, request, context):
            time.sleep(request.millis / 1000.0)
            return pb2.HelloReply(message="slept %d" % request.millis)

        def Big(self, request, context):
            return pb2.BigReply(received=len(request.payload), payload=b"x" * request.size)

        def Headers(self, request, context):
            # Response attachments the way a provider returns them: one in the headers, the
            # rest in the trailers (a binary one, and a Java-style tri-header-convert map).
            context.send_initial_metadata((("x-from-headers", "h"),))
            context.set_trailing_metadata((
                ("x-from-trailers", "t"),
                ("x-case", "restored"),
                ("blob-bin", b"hello"),
                ("tri-header-convert", '{"x-case":"X-Case"}'),
            ))
            h = {}
            for k, v in context.invocation_metadata():
                h[k] = v if isinstance(v, str) else v.hex()
            h["x-peer-port"] = str(BOUND[0])
            h["x-remaining-ms"] = str(int((context.time_remaining() or 0) * 1000))
            return pb2.HeadersReply(headers=h)

    class Other(pb2_grpc.OtherServicer):
        def Ping(self, request, context):
            return pb2.HelloReply(message="pong " + request.name)

    def _code(n):
        for c in grpc.StatusCode:
            if c.value[0] == n:
                return c.value
        return grpc.StatusCode.UNKNOWN.value

    opts = [("grpc.max_receive_message_length", 16 * 1024 * 1024),
            ("grpc.max_send_message_length", 16 * 1024 * 1024)]
    if no_gzip:
        opts.append(("grpc.compression_enabled_algorithms_bitset", 0b011))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=80), options=opts,
                         maximum_concurrent_rpcs=None)
    pb2_grpc.add_GreeterServicer_to_server(Greeter(), server)
    pb2_grpc.add_OtherServicer_to_server(Other(), server)
    handlers = {m: grpc.unary_unary_rpc_method_handler(wrapper_handler(m)) for m in WRAPPER_METHODS}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "org.apache.dubbo.tritest.DemoService", handlers),))
    if "tls-cert" in tls:
        def read(name):
            with open(tls[name], "rb") as f:
                return f.read()
        client_ca = read("tls-client-ca") if "tls-client-ca" in tls else None
        creds = grpc.ssl_server_credentials(
            [(read("tls-key"), read("tls-cert"))],
            root_certificates=client_ca,
            require_client_auth=client_ca is not None)
        bound = server.add_secure_port("127.0.0.1:%d" % port, creds)
    else:
        bound = server.add_insecure_port("127.0.0.1:%d" % port)
    BOUND[0] = bound
    server.start()
    print("PORT %d" % bound, flush=True)
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
