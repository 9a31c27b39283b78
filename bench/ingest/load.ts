/**
 * What the ingest benchmark sends: pre-signed, distinct Standard Webhooks requests (every one a
 * new event) for `httpLoad`, and the reference, the raw single-row INSERT … ON CONFLICT DO NOTHING
 * from a pg pool, timed the same way (first statement sent to last answer, `performance.now()`).
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import pg from "pg";
import { percentiles, type LoadResult } from "./httpLoad.js";

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

// The statement ingest runs (shared/inbound/inbox.ts), with values ready: no HTTP, no HMAC.
const INSERT = `INSERT INTO inbox_entries
  (partner_name, partner_event_id, event_type, payload, payload_sha256, signature_verified, received_at, next_attempt_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $7::timestamptz)
  ON CONFLICT (partner_name, partner_event_id) DO NOTHING
  RETURNING id`;

export interface RawInserter {
  /** `count` single-row inserts of distinct events, `concurrency` at a time. */
  run(count: number, concurrency: number, tag: string): Promise<LoadResult>;
  end(): Promise<void>;
}

/**
 * The reference contender: a pg pool of `poolSize`, kept open across runs like the ingest server's,
 * its connections opened before the first run.
 */
export async function rawInserter(url: string, poolSize: number): Promise<RawInserter> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  await Promise.all(Array.from({ length: poolSize }, () => pool.query("SELECT 1")));
  return {
    async run(count, concurrency, tag) {
      const rows = presign(count, tag).map((r) => {
        const payload = Buffer.from(r.body);
        return [r.headers["webhook-id"], payload, createHash("sha256").update(payload).digest("hex")] as const;
      });
      const latencies = new Float64Array(count);
      let next = 0;
      let failures = 0;
      const cpu0 = process.cpuUsage();
      const started = performance.now();
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (next < rows.length) {
          const i = next++;
          const [id, payload, hash] = rows[i]!;
          const t0 = performance.now();
          const r = await pool.query(INSERT, ["raw", id, "order.paid", payload, hash, true, new Date().toISOString()]);
          latencies[i] = performance.now() - t0;
          if (r.rowCount !== 1) failures++; // every event is new: each must insert its row
        }
      }));
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpu0);
      return {
        perSecond: count / seconds, ...percentiles(latencies), total: count, seconds, failures, clientCpuUsPerRequest: (cpu.user + cpu.system) / count, latencies,
        ...(failures ? { firstFailure: "an INSERT stored no row" } : {}),
      };
    },
    end: () => pool.end(),
  };
}
