/** The receiver's own ceiling: autocannon POSTing the same kind of request at the same concurrency. */
import { createRequire } from "node:module";
import { signatureHeader, generateSecret } from "../../shared/outbound/signature.js";
import { eventData } from "./support.js";

interface AutocannonResult { requests: { average: number; total: number }; non2xx: number; errors: number; latency: { p50: number; p99: number } }
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

export interface CeilingResult { perSecond: number; total: number; errors: number; p50Ms: number; p99Ms: number }

export async function measureCeiling(url: string, connections: number, seconds: number): Promise<CeilingResult> {
  const body = JSON.stringify({ id: "evt_bench", type: "bench.created", timestamp: new Date().toISOString(), data: eventData(1) });
  const ts = Math.floor(Date.now() / 1000);
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
  return { perSecond: result.requests.average, total: result.requests.total, errors: result.errors + result.non2xx, p50Ms: result.latency.p50, p99Ms: result.latency.p99 };
}
