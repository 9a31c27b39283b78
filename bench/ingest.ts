/**
 * Inbound ingest benchmark (not a test). In one run, on a fresh PostgreSQL database:
 *   - ingest: POST /webhooks/:partner on the local server (own process), exactly as shipped (group
 *     commit included), every request a new, signed Standard Webhooks event: verified, stored
 *     (inbox row committed), acknowledged;
 *   - the same database's raw single-row `INSERT … ON CONFLICT DO NOTHING` from a pg pool of the
 *     server's pool size, with as many inserts in flight as HTTP connections: the reference;
 *   - diagnostics: the same ingest with one INSERT per request (no group commit); HTTP +
 *     verification (nothing stored); HTTP alone;
 * then p50/p99 of ingest at half its maximum rate (an open schedule at that rate). Every rate is
 * the same amount of work over wall-clock time measured with performance.now() from the first
 * request sent to the last answer received (bench/ingest/httpLoad.ts; our own HTTP client, since
 * autocannon rounds its duration to whole seconds). Contenders are interleaved over several
 * rounds and medians reported, because the machine is shared; within a round ingest and raw run
 * in A B B A order (half the events each time), and ingest ÷ raw is also given per round.
 * Beside each rate: CPU per request of the load generator (this process), the server process,
 * and the PostgreSQL backends of the bench database (/proc), which say where the machine's two
 * cores go whatever else runs on it.
 *
 *   npm run bench:ingest
 *   env: BENCH_CONNECTIONS (32), BENCH_POOL (10), BENCH_EVENTS (20000), BENCH_ROUNDS (5),
 *        BENCH_HALF_SECONDS (5), BENCH_HALF_RUNS (3), BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres)
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { cpus, loadavg } from "node:os";
import { createInterface } from "node:readline";
import pg from "pg";
import { freshDatabase } from "./outbound/support.js";
import { httpLoad, percentiles, type LoadResult } from "./ingest/httpLoad.js";
import { backendCpu, cpuBetween } from "./backendCpu.js";
import { PARTNERS_JSON, presign, rawInserter } from "./ingest/load.js";
import { median, printTable } from "./table.js";
import { runBench } from "./runBench.js";
import { useThrowawayEncryptionKey } from "./throwawayKey.js";

// The server process (bench/ingest/server.ts) is a platform on PostgreSQL: it needs keys, and gets this one.
useThrowawayEncryptionKey();

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const POOL = Number(process.env.BENCH_POOL ?? 10);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const HALF_SECONDS = Number(process.env.BENCH_HALF_SECONDS ?? 5);
const HALF_RUNS = Number(process.env.BENCH_HALF_RUNS ?? 3);
const P99_TARGET_MS = 25;

interface Server { url: string; child: ChildProcess; cpuMs(): Promise<number> }

async function startServer(dbUrl: string): Promise<Server> {
  const child = spawn(process.execPath, ["--import", "tsx", new URL("./ingest/server.ts", import.meta.url).pathname], {
    env: { ...process.env, BENCH_DB_URL: dbUrl, BENCH_POOL: String(POOL), PARTNERS: PARTNERS_JSON, PARTNERS_FILE: "" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! });
  // Its first line is its port; if it exits first (its error is on stderr, inherited), say so.
  const exited = once(child, "exit").then(([code, signal]) => {
    throw new Error(`the ingest server process exited before listening (${code ?? signal}); its error is above`);
  });
  const [first] = (await Promise.race([once(lines, "line"), exited])) as [string];
  exited.catch(() => {});
  const url = `http://127.0.0.1:${(JSON.parse(first) as { port: number }).port}`;
  return {
    url,
    child,
    async cpuMs() {
      const r = (await (await fetch(`${url}/bench/cpu`)).json()) as { user: number; system: number };
      return (r.user + r.system) / 1000;
    },
  };
}

interface Sample extends LoadResult { serverCpuUsPerRequest: number | null; pgCpuUsPerRequest: number | null; stored: number | null }
interface Contender { name: string; key: string; stores: boolean; run: (tag: string, amount: number) => Promise<Sample> }

/** Two runs of one contender as one: their requests over their summed wall-clock time. */
function merge(a: Sample, b: Sample): Sample {
  const total = a.total + b.total;
  const seconds = a.seconds + b.seconds;
  const latencies = new Float64Array(total);
  latencies.set(a.latencies);
  latencies.set(b.latencies, a.total);
  const weighted = (x: number | null, y: number | null) => (x === null || y === null ? null : (x * a.total + y * b.total) / total);
  return {
    perSecond: total / seconds, ...percentiles(latencies), total, seconds, latencies,
    failures: a.failures + b.failures, firstFailure: a.firstFailure ?? b.firstFailure,
    clientCpuUsPerRequest: weighted(a.clientCpuUsPerRequest, b.clientCpuUsPerRequest)!,
    serverCpuUsPerRequest: weighted(a.serverCpuUsPerRequest, b.serverCpuUsPerRequest),
    pgCpuUsPerRequest: weighted(a.pgCpuUsPerRequest, b.pgCpuUsPerRequest),
    stored: a.stored === null || b.stored === null ? null : a.stored + b.stored,
  };
}

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => n.toFixed(1);


async function main() {
  const db = await freshDatabase("bench_ingest");
  const server = await startServer(db.url).catch(async (error: unknown) => { await db.drop(); throw error; });
  const count = new pg.Client({ connectionString: db.url });
  await count.connect();
  const stored = async () => Number((await count.query<{ n: string }>("SELECT count(*) AS n FROM inbox_entries")).rows[0]!.n);

  const raw = await rawInserter(db.url, POOL);
  /** PostgreSQL's CPU (backends of this database) around `work`, per request. */
  const withPgCpu = async <T extends LoadResult>(work: () => Promise<T>): Promise<T & { pgCpuUsPerRequest: number | null }> => {
    const before = await backendCpu(count);
    const r = await work();
    const after = await backendCpu(count);
    return { ...r, pgCpuUsPerRequest: before === null || after === null ? null : (cpuBetween(before, after) * 1000) / r.total };
  };

  /** One load run against `path`, with the server's and PostgreSQL's CPU and the rows it stored. */
  const viaHttp = async (path: string, tag: string, rate?: number, amount = EVENTS): Promise<Sample> => {
    const requests = presign(amount, tag);
    const [cpu0, rows0] = [await server.cpuMs(), await stored()];
    const r = await withPgCpu(() => httpLoad(server.url, path, requests, CONNECTIONS, rate));
    const [cpu1, rows1] = [await server.cpuMs(), await stored()];
    return { ...r, serverCpuUsPerRequest: ((cpu1 - cpu0) * 1000) / r.total, stored: rows1 - rows0 };
  };
  const viaPool = async (tag: string, amount = EVENTS): Promise<Sample> => {
    const [rows0, r, rows1] = [await stored(), await withPgCpu(() => raw.run(amount, CONNECTIONS, tag)), await stored()];
    return { ...r, serverCpuUsPerRequest: null, stored: rows1 - rows0 };
  };

  const http = (key: string, path: string, name: string, stores: boolean): Contender =>
    ({ key, name, stores, run: (tag, amount) => viaHttp(path, tag, undefined, amount) });
  const contenders: Contender[] = [
    http("ingest", "/webhooks/bench", "ingest: POST /webhooks/:partner (verify + group commit + 202)", true),
    { key: "raw", stores: true, name: `raw INSERT … ON CONFLICT DO NOTHING (pg pool ${POOL}, ${CONNECTIONS} in flight)`, run: (tag, amount) => viaPool(tag, amount) },
    http("single", "/bench/single/bench", "diagnostic: ingest with one INSERT per request", true),
    http("verify", "/bench/verify/bench", "diagnostic: HTTP + verify, nothing stored", false),
    http("noop", "/bench/noop", "diagnostic: HTTP alone (read body, 202)", false),
  ];

  console.log(`ingest benchmark: ${EVENTS} distinct signed events per run, ${CONNECTIONS} connections, server pool ${POOL}, ${ROUNDS} interleaved rounds, PostgreSQL ${db.url.replace(/\/\/[^@]*@/, "//")}, ${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  const load0 = loadavg()[0]!.toFixed(1);
  const samples = new Map<string, Sample[]>(contenders.map((c) => [c.key, []]));
  const check = (name: string, s: Sample, stores: boolean) => {
    if (s.failures > 0) throw new Error(`${name}: ${s.failures} requests failed (first: ${s.firstFailure}); the run is invalid.`);
    if (stores && s.stored !== null && s.stored !== s.total) throw new Error(`${name}: ${s.total} acknowledged but ${s.stored} stored.`);
  };
  try {
    // Warm-up (JIT, connections, PostgreSQL caches): a tenth of the work, discarded.
    for (const c of contenders) check(c.name, await c.run(`warm-${c.key}`, Math.ceil(EVENTS / 10)), c.stores);
    const [ingestC, rawC, ...diagnostics] = contenders as [Contender, Contender, ...Contender[]];
    const record = (c: Contender, s: Sample, round: number) => {
      samples.get(c.key)!.push(s);
      console.log(`  round ${round}: ${c.name}: ${int(s.perSecond)}/s (${s.total} in ${s.seconds.toFixed(3)} s), p50 ${ms(s.p50Ms)} ms, p99 ${ms(s.p99Ms)} ms`);
    };
    for (let round = 1; round <= ROUNDS; round++) {
      // Ingest and raw in A B B A order, half the events each time, so a machine getting busier or
      // quieter during the round weighs on both alike and the round's ratio compares like with like.
      const [a, b] = round % 2 ? [ingestC, rawC] : [rawC, ingestC];
      const halves = new Map<Contender, Sample[]>([[a, []], [b, []]]);
      for (const [i, c] of [a, b, b, a].entries()) {
        const s = await c.run(`${c.key}${round}_${i}`, Math.ceil(EVENTS / 2));
        check(c.name, s, c.stores);
        halves.get(c)!.push(s);
      }
      for (const c of [ingestC, rawC]) record(c, merge(halves.get(c)![0]!, halves.get(c)![1]!), round);
      // The diagnostics follow, in turn.
      const shift = (round - 1) % diagnostics.length;
      for (const c of [...diagnostics.slice(shift), ...diagnostics.slice(0, shift)]) {
        const s = await c.run(`${c.key}${round}`, EVENTS);
        check(c.name, s, c.stores);
        record(c, s, round);
      }
    }

    const med = (key: string, f: (s: Sample) => number) => median(samples.get(key)!.map(f));
    const rawRate = med("raw", (s) => s.perSecond);
    const roundRatios = samples.get("ingest")!.map((s, i) => s.perSecond / samples.get("raw")![i]!.perSecond);
    // Ingest at half its own maximum rate, HALF_RUNS times HALF_SECONDS; the median p99 is the verdict.
    const halfRate = Math.max(1, Math.floor(med("ingest", (s) => s.perSecond) / 2));
    // Each followed by HTTP + verification alone at the same rate: the tail the machine adds
    // without the database.
    const halves: Sample[] = [];
    const noDb: Sample[] = [];
    const halfAmount = Math.max(halfRate * HALF_SECONDS, CONNECTIONS);
    for (let i = 1; i <= HALF_RUNS; i++) {
      const h = await viaHttp("/webhooks/bench", `half${i}`, halfRate, halfAmount);
      check("half-rate ingest", h, true);
      halves.push(h);
      const v = await viaHttp("/bench/verify/bench", `halfv${i}`, halfRate, halfAmount);
      check("half-rate verify", v, false);
      noDb.push(v);
      console.log(`  half rate ${i} (${int(halfRate)}/s offered, ${int(h.perSecond)}/s done): ingest: p50 ${ms(h.p50Ms)} ms, p99 ${ms(h.p99Ms)} ms; HTTP + verify alone: p50 ${ms(v.p50Ms)} ms, p99 ${ms(v.p99Ms)} ms`);
    }
    const halfP99 = median(halves.map((h) => h.p99Ms));

    console.log(`\nmedians of ${ROUNDS} rounds (load average ${load0} → ${loadavg()[0]!.toFixed(1)}; 2 cores shared by the load generator, the server and PostgreSQL):\n`);
    const rows = [["", "req/s", "× raw insert", "p50 ms", "p99 ms", "p99 ms at half max", "CPU µs/req: client", "server", "PostgreSQL"]];
    for (const c of contenders) {
      rows.push([
        c.name,
        int(med(c.key, (s) => s.perSecond)),
        `${(med(c.key, (s) => s.perSecond) / rawRate).toFixed(2)}×`,
        ms(med(c.key, (s) => s.p50Ms)),
        ms(med(c.key, (s) => s.p99Ms)),
        c.key === "ingest" ? ms(halfP99) : "-",
        int(med(c.key, (s) => s.clientCpuUsPerRequest)),
        c.key === "raw" ? "-" : int(med(c.key, (s) => s.serverCpuUsPerRequest ?? 0)),
        samples.get(c.key)!.some((s) => s.pgCpuUsPerRequest === null) ? "?" : int(med(c.key, (s) => s.pgCpuUsPerRequest!)),
      ]);
    }
    printTable(rows);
    const ratio = med("ingest", (s) => s.perSecond) / rawRate;
    console.log(
      `\ningest: ${ratio.toFixed(2)}× the raw insert rate (target ≥ 1×: ${ratio >= 1 ? "met" : "NOT met"}); ` +
      `within each round ${roundRatios.map((r) => r.toFixed(2)).join(", ")} (lowest ${Math.min(...roundRatios).toFixed(2)}×); ` +
      `p99 at half its max rate ${ms(halfP99)} ms (median of ${halves.map((h) => ms(h.p99Ms)).join(", ")}; target < ${P99_TARGET_MS} ms: ${halfP99 < P99_TARGET_MS ? "met" : "NOT met"}; ` +
      `HTTP + verify alone at that rate: p99 ${ms(median(noDb.map((v) => v.p99Ms)))} ms)`,
    );
    const cpu = (key: string) => med(key, (s) => s.serverCpuUsPerRequest ?? 0);
    console.log(
      `where the server's CPU goes, per request: HTTP ${int(cpu("noop"))} µs, verification +${int(cpu("verify") - cpu("noop"))} µs, ` +
      `group-committed INSERT +${int(cpu("ingest") - cpu("verify"))} µs, single-row INSERT +${int(cpu("single") - cpu("verify"))} µs (medians, so the steps are approximate).`,
    );
  } finally {
    await raw.end();
    await count.end();
    server.child.kill("SIGTERM");
    await once(server.child, "exit");
    await db.drop();
  }
}

runBench("bench:ingest", main);
