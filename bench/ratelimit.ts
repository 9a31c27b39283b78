/**
 * Rate-limited receivers benchmark (issue 28, Must-show 1; not a test): how close to a receiver's
 * limit does a backlog drain? A receiver in its own process admits N requests per second (a token
 * bucket, burst N / 4) and answers every other request 429 with `Retry-After: 1`, stating nothing
 * else (no RateLimit headers: the relay must learn the rate from the 429s). A backlog is enqueued
 * for it at once, on a fresh PostgreSQL database, one subscription with platform defaults; then one
 * relay, or four sharing the database, drain it. Printed per row: the rate achieved (events over
 * the time from the relays' start to the last accepted request) as a share of the limit (target
 * ≥ 80 %), and the 429 answers per delivered event (target ≤ 0.2).
 *
 *   npm run bench:ratelimit
 *   env: BENCH_RATES (50,200,1000), BENCH_EVENTS (1000,3000,5000: one per rate), BENCH_RELAYS (1,4),
 *        BENCH_HEADERS=1 (the receiver also states its limit in RateLimit / RateLimit-Policy),
 *        BENCH_TRACE=1 (per second: accepted/429 answers, the pace kept, holds)
 */
import { loadavg } from "node:os";
import { openDatabase } from "../shared/db/open.js";
import type { Database } from "../shared/db/port.js";
import { grownRate } from "../shared/outbound/acceptedRate.js";
import { enqueueMany } from "../shared/outbound/enqueue.js";
import { createRelay, type Relay } from "../shared/outbound/relay.js";
import { createSubscription } from "../shared/outbound/subscriptions.js";
import { createTransport } from "../shared/outbound/transport.js";
import { startLimitedReceiver } from "../test/outbound/support/limitedReceiver.js";
import { freshDatabase } from "./outbound/support.js";
import { printTable } from "./table.js";
import { useThrowawayEncryptionKey } from "./throwawayKey.js";
import { runBench } from "./runBench.js";

useThrowawayEncryptionKey();

const list = (v: string | undefined, d: number[]) => (v ? v.split(",").map(Number) : d);
const RATES = list(process.env.BENCH_RATES, [50, 200, 1000]);
const EVENTS = list(process.env.BENCH_EVENTS, [1000, 3000, 5000]);
const RELAYS = list(process.env.BENCH_RELAYS, [1, 4]);
const HEADERS = process.env.BENCH_HEADERS === "1";
/** BENCH_TRACE=1: per second, the receiver's accepted/429 answers and the pace the relays kept. */
const TRACE = process.env.BENCH_TRACE === "1";

/** The subscription's pace now (its learnt rate as grown since), and whether a Retry-After holds it. */
async function paceNow(db: Database): Promise<{ pace: number | null; held: boolean }> {
  const r = await db.query<{ pace: number | null; held: boolean }>(
    `SELECT ${grownRate("s", "now()")} AS pace, COALESCE(s.throttled_until > now(), false) AS held FROM outbound_subscriptions s`);
  return r.rows[0] ?? { pace: null, held: false };
}

interface Outcome { delivered: number; seconds: number; rejected: number }

async function run(rate: number, events: number, relayCount: number): Promise<Outcome> {
  const fresh = await freshDatabase("bench_ratelimit");
  const admin: Database = await openDatabase({ databaseUrl: fresh.url, poolSize: 4 });
  const receiver = await startLimitedReceiver({ rate, burst: Math.max(1, Math.floor(rate / 4)), headers: HEADERS });
  const transport = createTransport({ allowedDestinations: ["127.0.0.1"] });
  const relays: Relay[] = [];
  const dbs: Database[] = [];
  try {
    await createSubscription(admin, { url: receiver.url, eventTypes: ["*"] });
    for (let from = 0; from < events; from += 500) {
      const n = Math.min(500, events - from);
      await admin.transaction((tx) => enqueueMany(tx, Array.from({ length: n }, (_, k) => ({ id: `e-${from + k}`, type: "order.paid", data: { k: from + k } }))));
    }
    for (let i = 0; i < relayCount; i++) {
      const db = await openDatabase({ databaseUrl: fresh.url, poolSize: 6 });
      dbs.push(db);
      relays.push(createRelay({ db, transport }));
    }
    const startedAt = Date.now();
    await Promise.all(relays.map((r) => r.start()));
    const deadline = startedAt + Math.max(60_000, (events / rate) * 10_000);
    let stats = await receiver.stats();
    const paces: { at: number; pace: number | null; held: boolean }[] = [];
    while (stats.accepted < events && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      stats = await receiver.stats();
      if (TRACE) paces.push({ at: Date.now(), ...(await paceNow(admin)) });
    }
    if (TRACE) {
      // Per second from the start: requests accepted / rejected.
      const per: string[] = [];
      for (let t = startedAt; t < stats.lastAcceptedAt!; t += 1000) {
        const inSecond = stats.arrivals.filter((a) => a.at >= t && a.at < t + 1000);
        per.push(`${inSecond.filter((a) => a.ok).length}/${inSecond.filter((a) => !a.ok).length}`);
      }
      console.log(`    per second (accepted/429): ${per.join(" ")}`);
      const pace: string[] = [];
      for (let t = startedAt; t < stats.lastAcceptedAt!; t += 1000) {
        const inSecond = paces.filter((p) => p.at >= t && p.at < t + 1000);
        const last = inSecond[inSecond.length - 1];
        pace.push(`${last?.pace == null ? "-" : last.pace.toFixed(0)}${inSecond.some((p) => p.held) ? "h" : ""}`);
      }
      if (process.env.BENCH_TRACE_FINE) {
        const fine: string[] = [];
        for (let t = startedAt; t < startedAt + 8000; t += 100) {
          const b = stats.arrivals.filter((a) => a.at >= t && a.at < t + 100);
          fine.push(`${b.filter((a) => a.ok).length}/${b.filter((a) => !a.ok).length}`);
        }
        console.log(`    per 100 ms: ${fine.join(" ")}`);
      }
      console.log(`    pace at each second's end (h: held by a Retry-After in it): ${pace.join(" ")}`);
    }
    if (stats.accepted < events) {
      const sub = await admin.query("SELECT learned_rate_per_second, learned_at, now() AS now, throttled_until, rate_next_at, status, consecutive_failures FROM outbound_subscriptions");
      const left = await admin.query("SELECT status, count(*)::int AS n, min(next_attempt_at) AS next, count(lease_token)::int AS leased, max(attempts) AS attempts FROM outbound_deliveries WHERE status <> 'delivered' GROUP BY status");
      console.log(JSON.stringify({ sub: sub.rows, left: left.rows }));
    }
    if (stats.accepted < events) throw new Error(`limit ${rate}/s: only ${stats.accepted} of ${events} delivered in time`);
    return { delivered: stats.accepted, seconds: (stats.lastAcceptedAt! - startedAt) / 1000, rejected: stats.rejected };
  } finally {
    await Promise.all(relays.map((r) => r.stop().catch(() => {})));
    await transport.close().catch(() => {});
    await receiver.stop();
    for (const db of dbs) await db.close();
    await admin.close();
    await fresh.drop();
  }
}

async function main() {
  console.log(`rate-limit benchmark: token-bucket receivers (burst N/4, 429 + Retry-After: 1 beyond)${HEADERS ? ", stating RateLimit / RateLimit-Policy" : ", no RateLimit headers"}; backlog enqueued at once; PostgreSQL; load ${loadavg()[0]!.toFixed(1)}`);
  const rows = [["receiver's limit", "relays", "events", "delivered at", "share of the limit", "429 answers", "429s per delivered"]];
  for (const [i, rate] of RATES.entries()) {
    const events = EVENTS[i] ?? EVENTS[EVENTS.length - 1]!;
    for (const relayCount of RELAYS) {
      const o = await run(rate, events, relayCount);
      const achieved = o.delivered / o.seconds;
      const share = achieved / rate;
      const per = o.rejected / o.delivered;
      console.log(`  ${rate}/s, ${relayCount} relay(s): ${o.delivered} in ${o.seconds.toFixed(1)} s, ${o.rejected} × 429`);
      rows.push([`${rate}/s`, String(relayCount), String(events), `${achieved.toFixed(0)}/s`,
        `${(share * 100).toFixed(0)} % (${share >= 0.8 ? "met" : "NOT met"})`, String(o.rejected), `${per.toFixed(2)} (${per <= 0.2 ? "met" : "NOT met"})`]);
    }
  }
  console.log("");
  printTable(rows);
  console.log(`load average at end ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
}

runBench("bench:ratelimit", main);
