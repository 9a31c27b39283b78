/**
 * Ordered delivery benchmark (issue 15, Must-show 6, second half; not a test): do 10 000 blocked
 * ordering keys slow the claims of the other keys? Two PostgreSQL databases, identical but for the
 * blocked keys: in one, an ordered subscription has BENCH_BLOCKED (10 000) keys whose head is a
 * dead letter with BENCH_WAITING (2) deliveries waiting behind each (30 000 rows in all); the
 * other has none. In each round, the same work on both (ABBA order, so drift in the shared
 * machine's load falls on both alike): BENCH_EVENTS (5 000) events on other keys of that same
 * subscription (BENCH_KEYS (500) keys, so each has several queued), claimed and completed by the
 * relay's own statements (claimDueDeliveries, completeDeliveries: no HTTP, the claim is what is
 * measured) until all are delivered. Reported: per-claim latency (median, p95), claims and
 * deliveries per second of the drain, and, from EXPLAIN (ANALYZE, BUFFERS) of one claim in the
 * middle of the drain, the entries of the due index it read (what would grow if a claim stepped
 * over waiting keys) and the pages it touched (which also grow, a little, with the tables' size:
 * every primary-key probe of a larger table may go one B-tree level deeper).
 *
 *   npm run bench:ordering
 *   env: BENCH_BLOCKED (10000), BENCH_WAITING (2), BENCH_EVENTS (5000), BENCH_KEYS (500), BENCH_ROUNDS (4), BENCH_BATCH (100)
 */
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { openDatabase } from "../shared/db/open.js";
import type { Database } from "../shared/db/port.js";
import { preparedName } from "../shared/db/prepared.js";
import { createSubscription, enqueueMany } from "../shared/outbound/index.js";
import { claimDueDeliveries, leaseWrite } from "../shared/outbound/sql/claimDeliveries.js";
import { completeDeliveries } from "../shared/outbound/sql/completeDeliveries.js";
import type { ClaimedDelivery, Completion } from "../shared/outbound/types.js";
import { freshDatabase } from "./outbound/support.js";
import { median, printTable } from "./table.js";
import { useThrowawayEncryptionKey } from "./throwawayKey.js";

// Subscription secrets are stored encrypted (docs/secrets.md); these databases are thrown away.
useThrowawayEncryptionKey();

const BLOCKED = Number(process.env.BENCH_BLOCKED ?? 10_000);
const WAITING = Number(process.env.BENCH_WAITING ?? 2);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000);
const KEYS = Number(process.env.BENCH_KEYS ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const BATCH = Number(process.env.BENCH_BATCH ?? 100);

const HEALTH = { degradeAfter: 1_000_000, disableAfter: 1_000_000, probeIntervalSeconds: 60, openAfterSeconds: 1_000_000 };
const outcome = (d: ClaimedDelivery, dead: boolean): Completion => ({
  delivery: d,
  outcome: dead
    ? { result: "permanent", status: 400, latencyMs: 1, errorClass: "http_4xx", responseExcerpt: null, retryAfterSeconds: null }
    : { result: "delivered", status: 200, latencyMs: 1, errorClass: null, responseExcerpt: null, retryAfterSeconds: null },
  decision: dead ? { status: "dead", delaySeconds: 0, deadReason: "permanent: HTTP 400 (bench)", counted: true } : { status: "delivered", delaySeconds: 0, deadReason: null, counted: true },
});

const relayId = randomUUID();
/** What this "relay" finished since its last claim, per database and subscription: reported at the next claim, as the relay does (its holds, migration 011). */
const finished = new Map<Database, Map<string, number>>();
const claim = async (db: Database) => {
  const done = finished.get(db) ?? new Map<string, number>();
  finished.set(db, new Map());
  return leaseWrite(db, (tx) => claimDueDeliveries(tx, { limit: BATCH, leaseSeconds: 60, leaseToken: randomUUID(), relayId, perSubscription: BATCH, done }));
};
const completeAll = async (db: Database, deliveries: ClaimedDelivery[], dead: boolean) => {
  await completeDeliveries(db, deliveries.map((d) => outcome(d, dead)), HEALTH);
  const done = finished.get(db) ?? new Map<string, number>();
  for (const d of deliveries) done.set(d.subscriptionId, (done.get(d.subscriptionId) ?? 0) + 1);
  finished.set(db, done);
};

interface Setup { db: Database; subscriptionId: string; drop(): Promise<void> }

async function setup(blocked: number): Promise<Setup> {
  const fresh = await freshDatabase("bench_ordering");
  const db = await openDatabase({ databaseUrl: fresh.url, poolSize: 4 });
  const sub = await createSubscription(db, { url: "https://example.com/bench", eventTypes: ["bench.*"], ordered: true, maxInFlight: 10_000 });
  // The blocked keys: each key's events, its first one dead-lettered by the relay's own completion.
  const perBatch = Math.floor(1000 / (1 + WAITING));
  for (let from = 0; from < blocked; from += perBatch) {
    const keys = Array.from({ length: Math.min(perBatch, blocked - from) }, (_, i) => from + i);
    await enqueueMany(db, keys.flatMap((k) => Array.from({ length: 1 + WAITING }, (_, n) => ({ id: `blk-${k}-${n}`, type: "bench.blocked", data: { k, n }, orderingKey: `blocked-${k}` }))));
  }
  for (let heads = await claim(db); heads.length > 0; heads = await claim(db)) await completeAll(db, heads, true);
  await db.query("VACUUM ANALYZE outbound_deliveries");
  await db.query("VACUUM ANALYZE outbound_ordering_keys");
  return { db, subscriptionId: sub.id, drop: async () => { await db.close(); await fresh.drop(); } };
}

interface Sample { claimMs: number[]; seconds: number; claims: number; delivered: number; buffers: number | null; entries: number | null }

let round = 0;
/** One round: EVENTS events on KEYS other keys, drained by claim + complete. */
async function drain(s: Setup): Promise<Sample> {
  const tag = `r${round++}`;
  for (let i = 0; i < EVENTS; i += 1000) {
    await enqueueMany(s.db, Array.from({ length: Math.min(1000, EVENTS - i) }, (_, j) => ({ id: `${tag}-${i + j}`, type: "bench.other", data: i + j, orderingKey: `other-${(i + j) % KEYS}` })));
  }
  // Fresh statistics, as autovacuum would have them: otherwise the empty database's plans (made
  // when its tables were nearly empty) are compared with the full one's.
  await s.db.query("ANALYZE outbound_deliveries");
  await s.db.query("ANALYZE outbound_events");
  await s.db.query("ANALYZE outbound_ordering_keys");
  const claimMs: number[] = [];
  let delivered = 0;
  let buffers: number | null = null;
  let entries: number | null = null;

  const start = performance.now();
  while (delivered < EVENTS) {
    if (buffers === null && delivered >= EVENTS / 2) ({ buffers, entries } = await claimBuffers(s.db));
    const t0 = performance.now();
    const got = await claim(s.db);
    claimMs.push(performance.now() - t0);
    if (got.length === 0) throw new Error(`nothing to claim with ${EVENTS - delivered} left: the drain is stuck`);
    await completeAll(s.db, got, false);
    delivered += got.length;
  }
  return { claimMs, seconds: (performance.now() - start) / 1000, claims: claimMs.length, delivered, buffers, entries };
}

/**
 * Shared buffers (8 kB pages) one claim's two statements touch: the relay's own claim, each
 * statement run under EXPLAIN (ANALYZE, BUFFERS) in a transaction rolled back (it claims nothing).
 */
async function claimBuffers(db: Database): Promise<{ buffers: number; entries: number }> {
  let total = 0;
  let entries = 0;
  /** Entries of the due-by-subscription index the plan read: rows returned plus rows filtered out, over all loops. */
  const walk = (node: Record<string, unknown>) => {
    if (node["Index Name"] === "outbound_deliveries_due_by_subscription") {
      entries += ((node["Actual Rows"] as number) + ((node["Rows Removed by Filter"] as number | undefined) ?? 0)) * ((node["Actual Loops"] as number) ?? 1);
    }
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  const rollback = new Error("rollback");
  await db.transaction(async (tx) => {
    const spy = {
      async query(text: string, values?: unknown[]) {
        const { rows } = await tx.query<{ "QUERY PLAN": { Plan: Record<string, number> }[] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
        const plan = rows[0]!["QUERY PLAN"][0]!.Plan;
        total += (plan["Shared Hit Blocks"] ?? 0) + (plan["Shared Read Blocks"] ?? 0);
        walk(plan);
        // The lock statement's rows feed the claim statement; the claim's own rows are not needed.
        return preparedName(text) === "outbound_claim_lock" ? tx.query(text, values) : { rows: [], rowCount: 0 };
      },
    };
    await claimDueDeliveries(spy as never, { limit: BATCH, leaseSeconds: 60, leaseToken: randomUUID(), relayId, perSubscription: BATCH });
    throw rollback;
  }).catch((error: unknown) => { if (error !== rollback) throw error; });
  return { buffers: total, entries };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

console.log(`ordering bench: ${BLOCKED} blocked keys (${WAITING} waiting behind each) vs none; ${EVENTS} events on ${KEYS} other keys per round, claims of ${BATCH}; ${ROUNDS} rounds ABBA; load ${loadavg()[0]!.toFixed(1)}`);
const without = await setup(0);
const withBlocked = await setup(BLOCKED);
const { rows: [counts] } = await withBlocked.db.query<{ dead: string; waiting: string; keys: string }>(
  "SELECT (SELECT count(*) FROM outbound_deliveries WHERE status = 'dead') AS dead, (SELECT count(*) FROM outbound_deliveries WHERE next_attempt_at = 'infinity') AS waiting, (SELECT count(*) FROM outbound_ordering_keys WHERE blocked_at IS NOT NULL) AS keys",
);
console.log(`set up: ${counts!.keys} blocked keys, ${counts!.dead} dead letters, ${counts!.waiting} deliveries waiting behind them`);
const samples = { without: [] as Sample[], with: [] as Sample[] };
try {
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? (["without", "with"] as const) : (["with", "without"] as const);
    for (const which of order) samples[which].push(await drain(which === "with" ? withBlocked : without));
  }
  const stat = (which: "without" | "with", f: (s: Sample) => number) => median(samples[which].map(f));
  const metrics: [string, (s: Sample) => number, number][] = [
    ["claim latency, median (ms)", (s) => median(s.claimMs), 2],
    ["claim latency, p95 (ms)", (s) => pct(s.claimMs, 95), 2],
    ["claims per second (claim + completion)", (s) => s.claims / s.seconds, 0],
    ["deliveries per second", (s) => s.delivered / s.seconds, 0],
    ["due-index entries one claim reads (EXPLAIN)", (s) => s.entries ?? NaN, 0],
    ["buffers one claim touches (EXPLAIN BUFFERS)", (s) => s.buffers ?? NaN, 0],
  ];
  const rows = [["metric (median of rounds)", "without blocked keys", `with ${BLOCKED} blocked keys`, "with / without"]];
  for (const [name, f, digits] of metrics) {
    const a = stat("without", f);
    const b = stat("with", f);
    rows.push([name, a.toFixed(digits), b.toFixed(digits), `${(b / a).toFixed(2)}×`]);
  }
  console.log("");
  printTable(rows);
  console.log(`\nEach round: ${EVENTS} deliveries on other keys of the same ordered subscription, all delivered. Load at the end ${loadavg()[0]!.toFixed(1)}.`);
} finally {
  await without.drop();
  await withBlocked.drop();
}
