// A Dubbo2 provider on sofa-rpc-node + dubbo-remoting + hessian.js (the Node test peer).
// Usage: node provider.js PORT [VERSION]   -> prints "READY PORT" once listening on 127.0.0.1.
'use strict';
const net = require('net');
// Bind to loopback only: sofa-rpc-node calls server.listen(port, cb).
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (port, ...rest) {
  if (typeof port === 'number') {
    return listen.call(this, port, '127.0.0.1', ...rest.filter(a => typeof a === 'function'));
  }
  return listen.call(this, port, ...rest);
};
const { RpcServer } = require('sofa-rpc-node').server;
const protocol = require('dubbo-remoting');

const port = Number(process.argv[2] || 20880);
const version = process.argv[3] || '1.0.0';
const quiet = { info() {}, warn() {}, debug() {}, error(...a) { console.error(...a); } };
const server = new RpcServer({ logger: quiet, protocol, port, publishAddress: '127.0.0.1' });
server.addService({ interfaceName: 'org.apache.dubbo.demo.DemoService', version, group: '' }, {
  async sayHello(name) { return 'Hello ' + name; },
  async add(a, b) { return a + b; },
  async echo(x) { return x; },
  async whoami() { return 'node'; },
  async nothing() { return null; },
  async boom() { throw new Error('boom'); },
});
server.start().then(() => {
  console.log('READY ' + port);
}, err => {
  console.error(err);
  process.exit(1);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
