/**
 * The benchmark's receiver, run as its own process so it does not share the event loop of the
 * sender it measures: a node:http server that reads each body and answers 204, counting POSTs.
 * The parent talks to it over IPC: `{ ready: port }` at start, `stats` → `{ count, cpuMs }`.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

let count = 0;
const server = createServer((req, res) => {
  req.on("data", () => {});
  req.on("end", () => {
    if (req.method === "POST") count += 1;
    res.statusCode = 204;
    res.end();
  });
});
server.keepAliveTimeout = 120_000;
server.headersTimeout = 130_000;
server.listen(0, "127.0.0.1", () => {
  process.send?.({ ready: (server.address() as AddressInfo).port });
});

process.on("message", (msg: unknown) => {
  if (msg === "stats") {
    const cpu = process.cpuUsage();
    process.send?.({ count, cpuMs: (cpu.user + cpu.system) / 1000 });
  } else if (msg === "stop") {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
process.on("disconnect", () => process.exit(0));
