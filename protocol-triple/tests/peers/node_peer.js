// Triple test peer on npm @apachedubbo/dubbo-node (apache/dubbo-js): h2c server with
// tritest.Greeter/SayHello registered three times with different (version, group). The adapter
// routes on path + tri-service-version + tri-service-group EXACTLY (absent = ""), so a reply
// names which registration answered; anything else is a bare HTTP 404.
//
// usage: node node_peer.js PORT       (0 = any free port; prints "PORT <n>" when listening)
const http2 = require("http2");
const { proto3, MethodKind } = require("@bufbuild/protobuf");
const { dubboNodeAdapter } = require("@apachedubbo/dubbo-node");
const { DubboError, Code } = require("@apachedubbo/dubbo");

const HelloRequest = proto3.makeMessageType("tritest.HelloRequest", [
  { no: 1, name: "name", kind: "scalar", T: 9 },
]);
const HelloReply = proto3.makeMessageType("tritest.HelloReply", [
  { no: 1, name: "message", kind: "scalar", T: 9 },
]);
const Greeter = {
  typeName: "tritest.Greeter",
  methods: {
    sayHello: { name: "SayHello", I: HelloRequest, O: HelloReply, kind: MethodKind.Unary },
  },
};

function impl(tag) {
  return {
    sayHello(req) {
      if (req.name === "fail") {
        throw new DubboError("bad name from " + tag, Code.InvalidArgument);
      }
      return { message: "Hello " + req.name + " from " + tag };
    },
  };
}

const routes = (router) => {
  router.service(Greeter, impl("default"));
  router.service(Greeter, impl("1.0.0/g1"), { serviceVersion: "1.0.0", serviceGroup: "g1" });
  router.service(Greeter, impl("2.0.0/"), { serviceVersion: "2.0.0", serviceGroup: "" });
};

const server = http2.createServer(dubboNodeAdapter({ routes }));
server.listen(Number(process.argv[2] || 0), "127.0.0.1", () => {
  console.log("PORT " + server.address().port);
});
