// The Node Dubbo2 consumer (sofa-rpc-node + dubbo-remoting) as a load generator, for the
// comparison in BENCHMARKS.md: node bench.js HOST:PORT CALLS CONCURRENCY [VERSION]
// Calls sayHello("rust") and prints one JSON line: calls/s, p50 and p99 in µs.
'use strict';
const { RpcClient } = require('sofa-rpc-node').client;
const protocol = require('dubbo-remoting');

async function main() {
  const [addr, callsArg, concArg, version] = process.argv.slice(2);
  const calls = Number(callsArg || 10000);
  const concurrency = Number(concArg || 1);
  const quiet = { info() {}, warn() {}, debug() {}, error(...a) { console.error(...a); } };
  const client = new RpcClient({ logger: quiet, protocol });
  const consumer = client.createConsumer({
    interfaceName: 'org.apache.dubbo.demo.DemoService',
    version: version || '1.0.0',
    group: '',
    serverHost: 'dubbo://' + addr,
    responseTimeout: 5000,
  });
  await consumer.ready();
  const args = ['rust'];
  await consumer.invoke('sayHello', args);
  let next = 0;
  let errors = 0;
  const lat = [];
  const start = process.hrtime.bigint();
  async function worker() {
    while (next++ < calls) {
      const t = process.hrtime.bigint();
      try {
        await consumer.invoke('sayHello', args);
      } catch (e) {
        errors++;
      }
      lat.push(Number(process.hrtime.bigint() - t) / 1e3);
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  lat.sort((a, b) => a - b);
  const pct = p => lat[Math.min(lat.length, Math.max(1, Math.ceil(lat.length * p))) - 1];
  console.log(JSON.stringify({
    client: 'node sofa-rpc-node 2.10.0 + dubbo-remoting 2.1.4',
    calls: lat.length, errors, concurrency, seconds,
    calls_per_sec: lat.length / seconds, p50_us: pct(0.5), p99_us: pct(0.99), max_us: lat[lat.length - 1],
  }));
  client.close();
  process.exit(0);
}
main().catch(e => { console.error(e); process.exit(1); });
