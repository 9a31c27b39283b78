/**
 * Enqueue cost benchmark (not a test): what `enqueue` (one event per transaction) and
 * `enqueueMany` (500 per transaction) cost today against the code of BENCH_BASELINE_COMMIT
 * (default 9a7f93a: before ordered delivery, applications and secrets at rest), side by side in
 * one run. The baseline's `shared/` is taken from git (git archive) into a temporary directory and
 * imported from there, so each side runs its own enqueue on a database migrated by its own
 * migrations (a fresh PostgreSQL database per run, created and dropped here).
 *
 * Contenders, per mode (single, batch):
 *   - baseline: its enqueue, one subscription for `bench.*` (it knows no keys nor applications);
 *   - today, the common case: the default application, an unordered subscription, events without a key;
 *   - today, events with keys but the subscription unordered (a producer that always sets keys);
 *   - today, an ordered subscription and events with keys (BENCH_KEYS distinct keys, cycled);
 *   - today, the same subscription plus 10 with content filters (issue 30), each matching about one
 *     event in two: the price of filters where they are used (ratios per event, so this row also
 *     carries its ~5 more deliveries per event; the first row is the one that must not move).
 * Measured over the timed window only (after a warm-up inside the same database): events/s
 * (wall clock), the PostgreSQL backends' CPU µs per event (/proc, bench/backendCpu.ts) and this
 * process's CPU µs per event. ABBA rounds (every other round in reverse order); medians; ratios
 * against the baseline, per round and of the medians. CPU per event moves far less with the
 * machine's load than events/s does: the ratio to read is PostgreSQL CPU.
 *
 *   BENCH_ONLY=enqueue npm run bench:outbound     (or: npx tsx bench/enqueue.ts)
 *   env: BENCH_BASELINE_COMMIT (9a7f93a), BENCH_ROUNDS (4), BENCH_SINGLE_EVENTS (2000),
 *        BENCH_SINGLE_CONNECTIONS (4), BENCH_BATCH_EVENTS (20000), BENCH_KEYS (100),
 *        BENCH_BASELINE_ORDERED=1 (the ordered workload only, on both sides)
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { cpuMsSince, databaseCpu, eventData, freshDatabase } from "./outbound/support.js";
import { median, printTable } from "./table.js";
import { useThrowawayEncryptionKey } from "./throwawayKey.js";
import { runBench } from "./runBench.js";

// Subscription secrets are stored encrypted since issue 17; the bench's databases are thrown away.
useThrowawayEncryptionKey();

const BASELINE = process.env.BENCH_BASELINE_COMMIT ?? "9a7f93abefcb03c83f5383281fc0628d2341904f";
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SINGLE_EVENTS = Number(process.env.BENCH_SINGLE_EVENTS ?? 2000);
const SINGLE_CONNECTIONS = Number(process.env.BENCH_SINGLE_CONNECTIONS ?? 4);
const BATCH_EVENTS = Number(process.env.BENCH_BATCH_EVENTS ?? 20_000);
const PER_TX = 500;
const KEYS = Number(process.env.BENCH_KEYS ?? 100);
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");

// The slice of each side's API the bench calls (both sides have these shapes).
interface Tx { query(text: string, values?: unknown[]): Promise<unknown> }
interface Db { transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>; query(text: string, values?: unknown[]): Promise<unknown>; close(): Promise<void> }
interface Side {
  openDatabase(o: { databaseUrl: string; poolSize: number }): Promise<Db>;
  enqueue(tx: Tx, event: object): Promise<unknown>;
  enqueueMany(tx: Tx, events: object[]): Promise<unknown>;
  createSubscription(db: Db, input: object): Promise<unknown>;
}

async function loadSide(root: string): Promise<Side> {
  const at = (p: string) => pathToFileURL(join(root, p)).href;
  const [open, enq, subs] = await Promise.all([import(at("shared/db/open.ts")), import(at("shared/outbound/enqueue.ts")), import(at("shared/outbound/subscriptions.ts"))]);
  return { openDatabase: open.openDatabase, enqueue: enq.enqueue, enqueueMany: enq.enqueueMany, createSubscription: subs.createSubscription };
}

/** The baseline's shared/ (and package.json, for the module type) in a temporary directory, with this tree's node_modules. */
function extractBaseline(): { root: string; remove(): void } {
  const root = mkdtempSync(join(tmpdir(), "enqueue-baseline-"));
  const archive = execFileSync("git", ["-C", REPO, "archive", BASELINE, "shared", "package.json"], { maxBuffer: 512 * 1024 * 1024 });
  execFileSync("tar", ["-x", "-C", root], { input: archive });
  symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
}

type Mode = "single" | "batch";
interface Contender { name: string; side: "base" | "head"; ordered: boolean; keys: boolean; filtered?: number }
interface Sample { perSecond: number; dbUs: number | null; processUs: number }

/**
 * BENCH_BASELINE_ORDERED=1: only the ordered workload, on both sides (for a baseline that has
 * ordered delivery already, e.g. a commit of this session before a change to its statement).
 */
const ORDERED_ONLY = process.env.BENCH_BASELINE_ORDERED === "1";
const allContenders: Contender[] = [
  { name: `baseline ${BASELINE.slice(0, 7)}`, side: "base", ordered: false, keys: false },
  { name: "today: default application, unordered, no key (common case)", side: "head", ordered: false, keys: false },
  { name: "today: unordered subscription, events with keys", side: "head", ordered: false, keys: true },
  { name: `today: ordered subscription, events with keys (${KEYS} keys)`, side: "head", ordered: true, keys: true },
  { name: "today: + 10 subscriptions with content filters, no key", side: "head", ordered: false, keys: false, filtered: 10 },
];
const contenders: Contender[] = ORDERED_ONLY
  ? [{ name: `baseline ${BASELINE.slice(0, 7)}: ordered subscription, events with keys (${KEYS} keys)`, side: "base", ordered: true, keys: true }, allContenders.at(-1)!]
  : allContenders;

const event = (c: Contender, i: number) => ({ id: `evt_${i}`, type: "bench.created", data: eventData(i), ...(c.keys ? { orderingKey: `ord_${i % KEYS}` } : {}) });

async function enqueueRange(side: Side, db: Db, c: Contender, mode: Mode, from: number, count: number): Promise<void> {
  if (mode === "batch") {
    for (let at = from; at < from + count; at += PER_TX) {
      const batch = Array.from({ length: Math.min(from + count, at + PER_TX) - at }, (_, k) => event(c, at + k));
      await db.transaction((tx) => side.enqueueMany(tx, batch));
    }
    return;
  }
  // One event per transaction, SINGLE_CONNECTIONS callers at once (an application's request handlers).
  let next = from;
  await Promise.all(Array.from({ length: SINGLE_CONNECTIONS }, async () => {
    while (next < from + count) {
      const i = next++;
      await db.transaction((tx) => side.enqueue(tx, event(c, i)));
    }
  }));
}

async function run(sides: Record<Contender["side"], Side>, c: Contender, mode: Mode): Promise<Sample> {
  const side = sides[c.side];
  const fresh = await freshDatabase("bench_enqueue");
  const db = await side.openDatabase({ databaseUrl: fresh.url, poolSize: Math.max(2, SINGLE_CONNECTIONS) });
  try {
    await side.createSubscription(db, { url: "http://127.0.0.1:9/bench", eventTypes: ["bench.*"], ...(c.ordered ? { ordered: true } : {}) });
    // Filters of several shapes; amountCents is 1000 + i % 5000, so each holds for about half the events.
    for (let k = 0; k < (c.filtered ?? 0); k++) {
      const filter = k % 2 === 0
        ? { "data.amountCents": { $gte: 1000 + 500 * k }, "data.currency": "EUR" }
        : { $or: [{ "data.amountCents": { $lt: 1000 + 500 * k } }, { "data.customer": { $in: ["cus_1", "cus_2"] } }], "data.items": { $exists: true } };
      await side.createSubscription(db, { url: "http://127.0.0.1:9/bench", eventTypes: ["bench.*"], filter });
    }
    const events = mode === "batch" ? BATCH_EVENTS : SINGLE_EVENTS;
    // Warm-up in the same database (prepared statements on every connection, caches), not timed.
    const warm = mode === "batch" ? 2 * PER_TX : 10 * SINGLE_CONNECTIONS;
    await enqueueRange(side, db, c, mode, 0, warm);
    await db.query("ANALYZE");
    const dbCpu = await databaseCpu(fresh.url);
    const cpu = process.cpuUsage();
    const start = performance.now();
    await enqueueRange(side, db, c, mode, warm, events);
    const seconds = (performance.now() - start) / 1000;
    const processMs = cpuMsSince(cpu);
    const dbMs = await dbCpu.sinceMs();
    return { perSecond: events / seconds, dbUs: dbMs === null ? null : (dbMs / events) * 1000, processUs: (processMs / events) * 1000 };
  } finally {
    await db.close();
    await fresh.drop();
  }
}

export async function main(): Promise<void> {
  const load = () => loadavg().map((x) => x.toFixed(1)).join(" ");
  const baseline = extractBaseline();
  try {
    const sides = { base: await loadSide(baseline.root), head: await loadSide(REPO) };
    console.log(`enqueue benchmark: today vs ${BASELINE.slice(0, 7)}, ${ROUNDS} ABBA rounds; single: ${SINGLE_EVENTS} events, one per transaction, ${SINGLE_CONNECTIONS} callers; batch: ${BATCH_EVENTS} events, ${PER_TX} per transaction; one subscription for bench.*`);
    const startLoad = load();
    const samples = new Map<string, Sample[]>();
    const key = (c: Contender, m: Mode) => `${m}|${c.name}`;
    for (const mode of ["single", "batch"] as const) for (const c of contenders) samples.set(key(c, mode), []);
    for (const mode of ["single", "batch"] as const) for (const c of contenders) await run(sides, c, mode); // warm-up round, discarded
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 1 ? contenders : [...contenders].reverse();
      for (const mode of ["single", "batch"] as const) {
        for (const c of order) {
          const s = await run(sides, c, mode);
          samples.get(key(c, mode))!.push(s);
          console.log(`  round ${round} ${mode}: ${c.name}: ${fmt(s.perSecond)}/s, PostgreSQL ${fmt(s.dbUs)} µs/event, process ${fmt(s.processUs)} µs/event`);
        }
      }
    }
    console.log(`load average at start ${startLoad}, at end ${load()} (cores: ${availableParallelism()})\n`);

    const rows = [["mode", "contender", "events/s (median)", "vs baseline", "PostgreSQL CPU µs/event", "vs baseline", "per round (PostgreSQL CPU)", "process CPU µs/event", "vs baseline"]];
    for (const mode of ["single", "batch"] as const) {
      const base = samples.get(key(contenders[0]!, mode))!;
      for (const c of contenders) {
        const s = samples.get(key(c, mode))!;
        const pick = (f: (x: Sample) => number | null) => median(s.map(f).filter((x): x is number => x !== null));
        const basePick = (f: (x: Sample) => number | null) => median(base.map(f).filter((x): x is number => x !== null));
        const ratio = (f: (x: Sample) => number | null) => (c.side === "base" ? "" : pct(pick(f) / basePick(f)));
        const perRound = c.side === "base" ? "" : s.map((x, i) => (x.dbUs === null || base[i]!.dbUs === null ? "-" : pct(x.dbUs / base[i]!.dbUs!))).join(" ");
        rows.push([mode, c.name, fmt(pick((x) => x.perSecond)), ratio((x) => x.perSecond), fmt(pick((x) => x.dbUs)), ratio((x) => x.dbUs), perRound, fmt(pick((x) => x.processUs)), ratio((x) => x.processUs)]);
      }
    }
    printTable(rows);
    console.log("vs baseline: today's median / the baseline's median in this run (PostgreSQL CPU: lower is better; events/s: higher is better)");
  } finally {
    baseline.remove();
  }
}

const fmt = (n: number | null) => (n === null || Number.isNaN(n) ? "-" : Math.round(n).toLocaleString("en-US"));
const pct = (r: number) => `${(r * 100).toFixed(0)}%`;

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runBench("bench/enqueue.ts", main);
}
