/**
 * The three ways the ingest benchmark loads the database: autocannon with pre-signed, distinct
 * Standard Webhooks requests (every one a new event), at full speed or at a fixed overall rate;
 * and the raw single-row INSERT … ON CONFLICT DO NOTHING from a pg pool, the reference.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import pg from "pg";

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  duration: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  "2xx": number;
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

export const SECRET = `whsec_${randomBytes(32).toString("base64")}`;
export const PARTNERS_JSON = JSON.stringify({ bench: { scheme: "standard-webhooks", secrets: [SECRET] } });

/** A realistic order event, about 300 bytes. */
function orderBody(id: string): string {
  return JSON.stringify({
    type: "order.paid",
    timestamp: new Date().toISOString(),
    data: { order_id: id, amount_cents: 4200, currency: "EUR", customer: { id: "cus_8f2a", email: "ada@example.com" }, items: [{ sku: "SKU-1", qty: 2 }] },
  });
}

export interface Presigned { headers: Record<string, string>; body: string }

/** `count` distinct events, signed now (they must be sent within the 300 s tolerance). */
export function presign(count: number, tag: string): Presigned[] {
  const key = Buffer.from(SECRET.slice("whsec_".length), "base64");
  const ts = String(Math.floor(Date.now() / 1000));
  return Array.from({ length: count }, (_, i) => {
    const id = `msg_${tag}_${i}`;
    const body = orderBody(id);
    const sig = createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
    return { headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${sig}` }, body };
  });
}

export interface LoadResult {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  /** Non-2xx answers, connection errors and timeouts: must be 0 for a valid run. */
  failures: number;
}

/** POSTs every request once over `connections` keep-alive connections; optionally at a fixed overall rate. */
export async function hammer(baseUrl: string, path: string, requests: Presigned[], connections: number, overallRate?: number): Promise<LoadResult> {
  let next = 0;
  const result = await autocannon({
    url: baseUrl,
    connections,
    pipelining: 1,
    amount: requests.length,
    timeout: 30,
    ...(overallRate ? { overallRate } : {}),
    requests: [{
      method: "POST",
      path,
      setupRequest: (req: Record<string, unknown>) => {
        const r = requests[next++ % requests.length]!;
        return { ...req, headers: r.headers, body: r.body };
      },
    }],
  });
  return {
    perSecond: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    total: result.requests.total,
    failures: result.non2xx + result.errors + result.timeouts,
  };
}

// The statement ingest runs (shared/inbound/inbox.ts), with values ready: no HTTP, no HMAC.
const INSERT = `INSERT INTO inbox_entries
  (partner_name, partner_event_id, event_type, payload, payload_sha256, signature_verified, received_at, next_attempt_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $7::timestamptz)
  ON CONFLICT (partner_name, partner_event_id) DO NOTHING
  RETURNING id`;

/** `count` single-row inserts of distinct events, `concurrency` at a time, from a pool of `poolSize`. */
export async function rawInserts(url: string, count: number, concurrency: number, poolSize: number, tag: string): Promise<LoadResult> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  const rows = presign(count, tag).map((r) => {
    const payload = Buffer.from(r.body);
    return [r.headers["webhook-id"], payload, createHash("sha256").update(payload).digest("hex")] as const;
  });
  // Open the pool's connections first: the ingest server's pool is warm too.
  await Promise.all(Array.from({ length: poolSize }, () => pool.query("SELECT 1")));
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < rows.length) {
      const [id, payload, hash] = rows[next++]!;
      const t0 = performance.now();
      await pool.query(INSERT, ["raw", id, "order.paid", payload, hash, true, new Date().toISOString()]);
      latencies.push(performance.now() - t0);
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  await pool.end();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { perSecond: count / seconds, p50Ms: at(0.5), p99Ms: at(0.99), total: count, failures: 0 };
}
