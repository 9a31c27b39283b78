/**
 * A rate-limited receiver in a process of its own, as many real ones are: a token bucket of `rate`
 * per second holding at most `burst` tokens (full at the start); a request that finds a token is
 * answered 204, any other `429` with `Retry-After: 1`. With `headers`, every answer states the
 * limit in the IETF draft's fields: `RateLimit-Policy: "bucket";q=<rate>;w=1` and
 * `RateLimit: "bucket";r=<tokens left>;t=<seconds until one is back>` (t = 0 while some are left).
 * A test peer: it models one limiter per endpoint, keyed by nothing (no per-client partitions) and
 * counting rejected requests as free (some receivers charge them).
 * In its own process so the relays' work in the caller's process cannot bunch its arrivals up.
 */
import { fork } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";

export interface LimitedReceiverOptions { rate: number; burst: number; headers?: boolean }
export interface LimitedReceiverStats {
  accepted: number;
  rejected: number;
  /** Arrival times (ms, Unix epoch) of the first request and of the last accepted one; null before any. */
  firstAt: number | null;
  lastAcceptedAt: number | null;
  /** Arrival times of every request (ms, Unix epoch), in order, and whether each was accepted. */
  arrivals: { at: number; ok: boolean }[];
}

if (process.send && process.argv.includes("--limited-receiver")) {
  const { rate, burst, headers } = JSON.parse(process.argv[process.argv.indexOf("--limited-receiver") + 1]!) as LimitedReceiverOptions;
  let tokens = burst;
  let refilledAt = Date.now();
  const stats: LimitedReceiverStats = { accepted: 0, rejected: 0, firstAt: null, lastAcceptedAt: null, arrivals: [] };
  const server = createServer((req, res) => {
    const now = Date.now();
    tokens = Math.min(burst, tokens + ((now - refilledAt) / 1000) * rate);
    refilledAt = now;
    stats.firstAt ??= now;
    const ok = tokens >= 1;
    if (ok) tokens -= 1;
    stats.arrivals.push({ at: now, ok });
    const head: Record<string, string> = {};
    if (headers) {
      head["ratelimit-policy"] = `"bucket";q=${rate};w=1`;
      head["ratelimit"] = `"bucket";r=${Math.floor(tokens)};t=${tokens >= 1 ? 0 : Math.ceil((1 - tokens) / rate)}`;
    }
    req.resume();
    req.on("end", () => {
      if (ok) {
        stats.accepted += 1;
        stats.lastAcceptedAt = now;
        res.writeHead(204, head).end();
      } else {
        stats.rejected += 1;
        res.writeHead(429, { ...head, "retry-after": "1" }).end();
      }
    });
  });
  server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on("message", (m) => {
    if (m === "stats") process.send!({ stats });
    if (m === "stop") { server.closeAllConnections(); server.close(() => process.exit(0)); }
  });
}

export async function startLimitedReceiver(options: LimitedReceiverOptions): Promise<{ url: string; stats(): Promise<LimitedReceiverStats>; stop(): Promise<void> }> {
  const child = fork(fileURLToPath(import.meta.url), ["--limited-receiver", JSON.stringify(options)], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`limited receiver exited with ${code}`)));
    child.on("message", (m: { port?: number }) => { if (m.port) resolve(m.port); });
  });
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    stats: () => new Promise((resolve) => {
      const on = (m: { stats?: LimitedReceiverStats }) => { if (m.stats) { child.off("message", on); resolve(m.stats); } };
      child.on("message", on);
      child.send("stats");
    }),
    stop: () => new Promise((resolve) => { child.removeAllListeners("exit"); child.once("exit", () => resolve()); child.send("stop"); }),
  };
}
