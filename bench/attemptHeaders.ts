/**
 * What keeping each attempt's request headers costs the relay's completion write (issue 32: the
 * portal shows them; migration 026's request_headers, written in the same INSERT). Not a test.
 *
 * One PostgreSQL database, one subscription, BENCH_DELIVERIES (2 000) deliveries leased again
 * before each write; the relay's own completeDeliveries in batches of BENCH_BATCH (500), the
 * completions identical but for `outcome.requestHeaders` (the six headers an attempt of a
 * subscription with one custom header sends, as headersForLog keeps them) or none. Sides
 * alternate ABBA over BENCH_ROUNDS (6) rounds, so the shared machine's drift falls on both.
 * Reported: median ms per batch write, its ratio, and the bytes the attempt log grew per attempt.
 *
 *   npx tsx bench/attemptHeaders.ts
 */
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { openDatabase } from "../shared/db/open.js";
import { migrate } from "../shared/db/migrate.js";
import type { Database } from "../shared/db/port.js";
import { createSubscription, enqueueMany } from "../shared/outbound/index.js";
import { completeDeliveries } from "../shared/outbound/sql/completeDeliveries.js";
import { DEFAULT_HEALTH_POLICY } from "../shared/outbound/health.js";
import { headersForLog } from "../shared/outbound/transport.js";
import type { ClaimedDelivery, Completion } from "../shared/outbound/types.js";
import { freshDatabase } from "./outbound/support.js";
import { median, printTable } from "./table.js";
import { useThrowawayEncryptionKey } from "./throwawayKey.js";

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 2000);
const BATCH = Number(process.env.BENCH_BATCH ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);

useThrowawayEncryptionKey();
const { url, drop } = await freshDatabase("wh_bench_headers");
const db: Database = await openDatabase({ databaseUrl: url, poolSize: 4 });
try {
  await migrate(db);
  const sub = await createSubscription(db, { url: "https://receiver.example/hooks", eventTypes: ["bench.*"] });
  for (let i = 0; i < DELIVERIES; i += 1000) {
    await db.transaction((tx) => enqueueMany(tx, Array.from({ length: Math.min(1000, DELIVERIES - i) }, (_, k) => ({ type: "bench.x", data: { n: i + k } }))));
  }
  const ids = (await db.query<{ id: string }>("SELECT id FROM outbound_deliveries ORDER BY id")).rows.map((r) => r.id);
  const sent = headersForLog({
    "x-tenant": "acme", "content-type": "application/json", "user-agent": "multicloud-webhooks/0.1 (+standard-webhooks)",
    "webhook-id": `${ids[0]}`, "webhook-timestamp": "1796300000", "webhook-signature": "v1,KLxhHnWKIEOn2r/lDgCSZf9tMsGPHEQQI4S4G+HbPB8=",
  });

  /** Leases every delivery again (pending, due later), as a claim would; the tokens to complete with. */
  const lease = async (): Promise<Map<string, string>> => {
    const { rows } = await db.query<{ id: string; lease_token: string }>(
      "UPDATE outbound_deliveries SET lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute', status = 'pending' RETURNING id, lease_token",
    );
    return new Map(rows.map((r) => [r.id, r.lease_token]));
  };
  const completion = (id: string, token: string, withHeaders: boolean): Completion => ({
    delivery: { id, eventId: id.split(":")[0]!, subscriptionId: sub.id, url: sub.url, secrets: [], body: "{}", attempts: 0, maxAttempts: null, leaseToken: token, probe: false } as ClaimedDelivery,
    outcome: { result: "delivered", status: 200, latencyMs: 3.2, errorClass: null, responseExcerpt: "ok", retryAfterSeconds: null, ...(withHeaders ? { requestHeaders: { ...sent, "webhook-id": id } } : {}) },
    // Kept pending so the next round leases the same rows; the write is the same statement.
    decision: { status: "pending", delaySeconds: 3600, deadReason: null, counted: true },
  });
  const side = async (withHeaders: boolean): Promise<number[]> => {
    const tokens = await lease();
    const times: number[] = [];
    for (let i = 0; i < ids.length; i += BATCH) {
      const batch = ids.slice(i, i + BATCH).map((id) => completion(id, tokens.get(id) ?? randomUUID(), withHeaders));
      const start = performance.now();
      await completeDeliveries(db, batch, DEFAULT_HEALTH_POLICY);
      times.push(performance.now() - start);
    }
    return times;
  };
  const size = async () => Number((await db.query<{ n: string }>("SELECT pg_total_relation_size('outbound_attempt_rows') AS n")).rows[0]!.n);
  const count = async () => Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM outbound_attempt_rows")).rows[0]!.n);

  await side(false); // warm-up: plans, caches
  const results = { without: [] as number[], with: [] as number[] };
  const growth = { without: [] as number[], with: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const withHeaders of round % 2 === 0 ? [false, true, true, false] : [true, false, false, true]) {
      const [s0, c0] = [await size(), await count()];
      results[withHeaders ? "with" : "without"].push(...(await side(withHeaders)));
      await db.query("VACUUM outbound_attempt_rows");
      growth[withHeaders ? "with" : "without"].push((await size() - s0) / (await count() - c0));
    }
  }
  const a = median(results.without);
  const b = median(results.with);
  console.log(`\ncompleteDeliveries, ${BATCH} completions per write, ${ROUNDS} ABBA rounds, load ${loadavg()[0]!.toFixed(1)} (a shared machine)\n`);
  printTable([
    ["attempt log", "ms per write (median)", "ratio", "bytes per attempt"],
    ["without request headers", a.toFixed(1), "1.00", median(growth.without).toFixed(0)],
    ["with request headers", b.toFixed(1), (b / a).toFixed(2), median(growth.with).toFixed(0)],
  ]);
} finally {
  await db.close();
  await drop();
}
