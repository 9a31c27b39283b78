/**
 * A receiver in a process of its own that records when each request arrived (its headers parsed)
 * and answers 200 at once: for tests that count requests per time window, so the relays' and
 * PGlite's work in the test process cannot bunch the arrivals up as it would in a receiver there.
 * Run with `startTimingReceiver()`; `times()` returns the arrival times (ms, Unix epoch) so far,
 * `ids()` the requests' webhook-id headers in the same order.
 */
import { fork } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";

if (process.send && process.argv.includes("--timing-receiver")) {
  const times: number[] = [];
  const ids: string[] = [];
  const server = createServer((req, res) => {
    times.push(performance.timeOrigin + performance.now());
    ids.push(String(req.headers["webhook-id"] ?? ""));
    req.resume();
    req.on("end", () => res.writeHead(200).end());
  });
  server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on("message", (m) => {
    if (m === "times") process.send!({ times, ids });
    if (m === "stop") { server.closeAllConnections(); server.close(() => process.exit(0)); }
  });
}

export async function startTimingReceiver(): Promise<{ url: string; times(): Promise<number[]>; ids(): Promise<string[]>; stop(): Promise<void> }> {
  const child = fork(fileURLToPath(import.meta.url), ["--timing-receiver"], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`timing receiver exited with ${code}`)));
    child.on("message", (m: { port?: number }) => { if (m.port) resolve(m.port); });
  });
  const received = () => new Promise<{ times: number[]; ids: string[] }>((resolve) => {
    const on = (m: { times?: number[]; ids?: string[] }) => { if (m.times && m.ids) { child.off("message", on); resolve({ times: m.times, ids: m.ids }); } };
    child.on("message", on);
    child.send("times");
  });
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    times: async () => (await received()).times,
    ids: async () => (await received()).ids,
    stop: () => new Promise((resolve) => { child.removeAllListeners("exit"); child.once("exit", () => resolve()); child.send("stop"); }),
  };
}
