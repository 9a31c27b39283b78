/**
 * The receiver's own ceiling: autocannon POSTing the same kind of request at the same concurrency.
 * autocannon runs in this process, so its CPU (the load generator's) is measured here too: the
 * ceiling is what the receiver does when the sender is about as cheap as an HTTP client gets.
 */
import { createRequire } from "node:module";
import { signatureHeader, generateSecret } from "../../shared/outbound/signature.js";
import { cpuMsSince, eventData, receiverWindow, type ReceiverStats, type WindowReading } from "./support.js";

interface AutocannonResult { requests: { average: number; total: number }; non2xx: number; errors: number; latency: { p50: number; p99: number } }
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

export interface CeilingResult {
  perSecond: number; total: number; errors: number; p50Ms: number; p99Ms: number;
  /** autocannon's CPU (this process) per request. */
  cpuMsPerEvent: number;
  receiver: WindowReading | null;
}

export async function measureCeiling(url: string, connections: number, seconds: number, receiverStats?: ReceiverStats): Promise<CeilingResult> {
  const body = JSON.stringify({ id: "evt_bench", type: "bench.created", timestamp: new Date().toISOString(), data: eventData(1) });
  const ts = Math.floor(Date.now() / 1000);
  const rx = await receiverWindow(receiverStats);
  const cpu = process.cpuUsage();
  const result = await autocannon({
    url: `${url}/ceiling`,
    method: "POST",
    connections,
    pipelining: 1,
    duration: seconds,
    body,
    headers: {
      "content-type": "application/json",
      "webhook-id": "evt_bench:sub_bench",
      "webhook-timestamp": String(ts),
      "webhook-signature": signatureHeader([generateSecret()], "evt_bench:sub_bench", ts, body),
    },
  });
  const cpuMs = cpuMsSince(cpu);
  const receiver = await rx.end();
  const total = result.requests.total;
  return { perSecond: result.requests.average, total, errors: result.errors + result.non2xx, p50Ms: result.latency.p50, p99Ms: result.latency.p99, cpuMsPerEvent: cpuMs / total, receiver };
}
