/**
 * Inbound ingest benchmark (not a test). In one run, on a fresh PostgreSQL database:
 *   - ingest: POST /webhooks/:partner on the local server (own process), every request a new,
 *     signed Standard Webhooks event: verified, stored (inbox row committed), acknowledged;
 *   - the same database's raw single-row `INSERT … ON CONFLICT DO NOTHING` from a pg pool of the
 *     server's pool size, with as many inserts in flight as HTTP connections: the reference;
 *   - ingest with group commit (shared/inbound/groupCommit.ts, a bench-only route until ingest uses it);
 *   - where the time goes: HTTP alone, HTTP + verification (nothing stored);
 * then p50/p99 of ingest at half its maximum rate (autocannon overallRate). Contenders are
 * interleaved over several rounds and medians reported, because the machine is shared.
 *
 *   npm run bench:ingest
 *   env: BENCH_CONNECTIONS (32), BENCH_POOL (10), BENCH_EVENTS (20000), BENCH_ROUNDS (3),
 *        BENCH_HALF_SECONDS (5), BENCH_GROUP_IN_FLIGHT (half the pool),
 *        BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres)
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { loadavg } from "node:os";
import { createInterface } from "node:readline";
import pg from "pg";
import { freshDatabase } from "./outbound/support.js";
import { hammer, PARTNERS_JSON, presign, rawInserts, type LoadResult } from "./ingest/load.js";
import { median, printTable } from "./table.js";

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const POOL = Number(process.env.BENCH_POOL ?? 10);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const HALF_SECONDS = Number(process.env.BENCH_HALF_SECONDS ?? 5);
const P99_TARGET_MS = 25;

interface Server { url: string; child: ChildProcess; cpuMs(): Promise<number> }

async function startServer(dbUrl: string): Promise<Server> {
  const child = spawn(process.execPath, ["--import", "tsx", new URL("./ingest/server.ts", import.meta.url).pathname], {
    env: { ...process.env, BENCH_DB_URL: dbUrl, BENCH_POOL: String(POOL), PARTNERS: PARTNERS_JSON, PARTNERS_FILE: "" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! });
  const [first] = (await once(lines, "line")) as [string];
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

interface Sample extends LoadResult { serverCpuUsPerRequest: number | null; stored: number | null }
interface Contender { name: string; key: string; run: (round: number) => Promise<Sample> }

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => n.toFixed(1);


async function main() {
  const db = await freshDatabase("bench_ingest");
  const server = await startServer(db.url);
  const count = new pg.Client({ connectionString: db.url });
  await count.connect();
  const stored = async () => Number((await count.query<{ n: string }>("SELECT count(*) AS n FROM inbox_entries")).rows[0]!.n);

  /** One autocannon run against `path`, with the server's CPU and the rows it stored. */
  const viaHttp = async (path: string, tag: string, rate?: number, amount = EVENTS): Promise<Sample> => {
    const requests = presign(amount, tag);
    const [cpu0, rows0] = [await server.cpuMs(), await stored()];
    const r = await hammer(server.url, path, requests, CONNECTIONS, rate);
    const [cpu1, rows1] = [await server.cpuMs(), await stored()];
    return { ...r, serverCpuUsPerRequest: ((cpu1 - cpu0) * 1000) / r.total, stored: rows1 - rows0 };
  };

  const contenders: Contender[] = [
    { key: "ingest", name: "ingest: POST /webhooks/:partner (verify + INSERT + 202)", run: (n) => viaHttp("/webhooks/bench", `i${n}`) },
    { key: "raw", name: `raw INSERT … ON CONFLICT DO NOTHING (pg pool ${POOL}, ${CONNECTIONS} in flight)`, run: async (n) => ({ ...(await rawInserts(db.url, EVENTS, CONNECTIONS, POOL, `r${n}`)), serverCpuUsPerRequest: null, stored: null }) },
    { key: "grouped", name: "ingest with group commit (bench route)", run: (n) => viaHttp("/bench/grouped/bench", `g${n}`) },
    { key: "verify", name: "diagnostic: HTTP + verify, nothing stored", run: (n) => viaHttp("/bench/verify/bench", `v${n}`) },
    { key: "noop", name: "diagnostic: HTTP alone (read body, 202)", run: (n) => viaHttp("/bench/noop", `n${n}`) },
  ];

  console.log(`ingest benchmark: ${EVENTS} distinct signed events per run, ${CONNECTIONS} connections, server pool ${POOL} (group commit: ${process.env.BENCH_GROUP_IN_FLIGHT ?? Math.max(1, Math.floor(POOL / 2))} INSERTs in flight), ${ROUNDS} interleaved rounds, PostgreSQL ${db.url.replace(/\/\/[^@]*@/, "//")}`);
  const load0 = loadavg()[0]!.toFixed(1);
  const samples = new Map<string, Sample[]>(contenders.map((c) => [c.key, []]));
  try {
    // Warm-up (JIT, connections, PostgreSQL caches): a tenth of the work, discarded.
    await viaHttp("/webhooks/bench", "warm-i", undefined, Math.ceil(EVENTS / 10));
    await viaHttp("/bench/grouped/bench", "warm-g", undefined, Math.ceil(EVENTS / 10));
    await rawInserts(db.url, Math.ceil(EVENTS / 10), CONNECTIONS, POOL, "warm-r");
    for (let round = 1; round <= ROUNDS; round++) {
      for (const c of contenders) {
        const s = await c.run(round);
        if (s.failures > 0) throw new Error(`${c.name}: ${s.failures} requests failed (non-2xx, errors or timeouts); the run is invalid.`);
        if (s.stored !== null && c.key !== "verify" && c.key !== "noop" && s.stored !== s.total) throw new Error(`${c.name}: ${s.total} acknowledged but ${s.stored} stored.`);
        samples.get(c.key)!.push(s);
        console.log(`  round ${round}: ${c.name}: ${int(s.perSecond)}/s, p50 ${ms(s.p50Ms)} ms, p99 ${ms(s.p99Ms)} ms`);
      }
    }

    const med = (key: string, f: (s: Sample) => number) => median(samples.get(key)!.map(f));
    const raw = med("raw", (s) => s.perSecond);
    // Half of each one's own maximum rate, for HALF_SECONDS.
    const half = new Map<string, Sample>();
    for (const key of ["ingest", "grouped"]) {
      const rate = Math.max(1, Math.floor(med(key, (s) => s.perSecond) / 2));
      const path = key === "ingest" ? "/webhooks/bench" : "/bench/grouped/bench";
      const s = await viaHttp(path, `h${key}`, rate, Math.max(rate * HALF_SECONDS, CONNECTIONS));
      if (s.failures > 0) throw new Error(`half-rate ${key}: ${s.failures} requests failed.`);
      half.set(key, s);
      console.log(`  half rate (${int(rate)}/s): ${key}: p50 ${ms(s.p50Ms)} ms, p99 ${ms(s.p99Ms)} ms`);
    }

    console.log(`\nmedians of ${ROUNDS} rounds (load average ${load0} → ${loadavg()[0]!.toFixed(1)} on this shared machine):\n`);
    const rows = [["", "req/s", "× raw insert", "p50 ms", "p99 ms", "p99 ms at half max", "server CPU µs/req"]];
    for (const c of contenders) {
      const h = half.get(c.key);
      rows.push([
        c.name,
        int(med(c.key, (s) => s.perSecond)),
        `${(med(c.key, (s) => s.perSecond) / raw).toFixed(2)}×`,
        ms(med(c.key, (s) => s.p50Ms)),
        ms(med(c.key, (s) => s.p99Ms)),
        h ? ms(h.p99Ms) : "-",
        c.key === "raw" ? "-" : int(med(c.key, (s) => s.serverCpuUsPerRequest ?? 0)),
      ]);
    }
    printTable(rows);
    const verdict = (key: string) => {
      const ratio = med(key, (s) => s.perSecond) / raw;
      const p99 = half.get(key)!.p99Ms;
      return `${key}: ${ratio.toFixed(2)}× the raw insert rate (target ≥ 1×: ${ratio >= 1 ? "met" : "NOT met"}), p99 ${ms(p99)} ms at half its max rate (target < ${P99_TARGET_MS} ms: ${p99 < P99_TARGET_MS ? "met" : "NOT met"})`;
    };
    console.log(`\n${verdict("ingest")}\n${verdict("grouped")}`);
    const cpu = (key: string) => med(key, (s) => s.serverCpuUsPerRequest ?? 0);
    console.log(
      `where the server's CPU goes, per request: HTTP ${int(cpu("noop"))} µs, verification +${int(cpu("verify") - cpu("noop"))} µs, ` +
      `single-row INSERT +${int(cpu("ingest") - cpu("verify"))} µs, group-committed INSERT +${int(cpu("grouped") - cpu("verify"))} µs (medians, so the steps are approximate); ` +
      `HTTP alone (no verification, no database) reaches ${(med("noop", (s) => s.perSecond) / raw).toFixed(2)}× the raw insert rate on this machine.`,
    );
  } finally {
    await count.end();
    server.child.kill("SIGTERM");
    await once(server.child, "exit");
    await db.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
