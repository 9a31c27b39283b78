/**
 * Outbound delivery benchmark (not a test): in one run on this machine, events per second
 * delivered to a local no-op receiver (a node:http process of its own) by
 *   - one of our relays (outbox on PostgreSQL → signed POST), default and tuned settings,
 *   - graphile-worker 0.17 running the same workload (one job per event, same HTTP transport),
 *     with the batching its performance page advises,
 *   - nobody: the receiver's own ceiling, measured with autocannon at the same concurrency,
 *   - our transport alone (no database), to separate HTTP cost from outbox cost.
 * Every contender uses the same number of HTTP connections. Each run gets a fresh PostgreSQL
 * database, created and dropped here. The machine is shared, so contenders are interleaved over
 * several rounds and the median of each is reported.
 *
 *   npm run bench:outbound
 *   env: BENCH_EVENTS (10000), BENCH_CONNECTIONS (64), BENCH_ROUNDS (3), BENCH_CEILING_SECONDS (5)
 */
import { availableParallelism, loadavg } from "node:os";
import { measureCeiling } from "./outbound/ceiling.js";
import { runGraphile } from "./outbound/graphile.js";
import { runOurs } from "./outbound/ours.js";
import { startReceiver } from "./outbound/support.js";
import { measureTransport } from "./outbound/transportOnly.js";
import { median, printTable } from "./table.js";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CEILING_SECONDS = Number(process.env.BENCH_CEILING_SECONDS ?? 5);

interface Sample { perSecond: number; cpuUsPerEvent: number | null; dbCpuUsPerEvent: number | null; enqueuePerSecond: number | null; notes: string[] }
interface Contender { name: string; kind: "ours" | "graphile" | "reference" | "diagnostic"; run: (url: string) => Promise<Sample> }

const C = CONNECTIONS;
const contenders: Contender[] = [
  // The relay's defaults (concurrency 256, batch 250, 2 completion writers), HTTP capped at the connections.
  { name: `our relay, defaults (concurrency 256, batch 250, 2 writers)`, kind: "ours", run: (u) => runOurs(u, EVENTS, C, 256, 250).then(fromRun) },
  { name: `our relay, tuned (concurrency ${8 * C}, batch 250, 3 writers)`, kind: "ours", run: (u) => runOurs(u, EVENTS, C, 8 * C, 250, { completionWriters: 3 }).then(fromRun) },
  { name: `graphile-worker, concurrentJobs ${C}, localQueue ${C + 1}`, kind: "graphile", run: (u) => runGraphile(u, EVENTS, C, C + 1).then(fromRun) },
  { name: `graphile-worker, concurrentJobs ${C}, localQueue 500`, kind: "graphile", run: (u) => runGraphile(u, EVENTS, C, 500).then(fromRun) },
  { name: `diagnostic: our relay tuned, no HTTP (instant fake transport)`, kind: "diagnostic", run: (u) => runOurs(u, EVENTS, C, 8 * C, 250, { noHttp: true, completionWriters: 3 }).then(fromRun) },
  { name: `diagnostic: graphile-worker localQueue ${C + 1}, no-op task`, kind: "diagnostic", run: (u) => runGraphile(u, EVENTS, C, C + 1, { noHttp: true }).then(fromRun) },
  { name: "our transport alone (no database)", kind: "reference", run: (u) => measureTransport(u, C, CEILING_SECONDS).then((r) => ({ perSecond: r.perSecond, cpuUsPerEvent: r.cpuMsPerEvent * 1000, dbCpuUsPerEvent: null, enqueuePerSecond: null, notes: [`avg latency ${r.avgLatencyMs.toFixed(1)} ms`] })) },
  { name: `receiver ceiling (autocannon, ${C} connections)`, kind: "reference", run: (u) => measureCeiling(u, C, CEILING_SECONDS).then((r) => ({ perSecond: r.perSecond, cpuUsPerEvent: null, dbCpuUsPerEvent: null, enqueuePerSecond: null, notes: [`p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, errors ${r.errors}`] })) },
];

function fromRun(r: { perSecond: number; cpuMsPerEvent: number; dbCpuMsPerEvent: number | null; enqueuePerSecond: number; breakdown: string[] }): Sample {
  return { perSecond: r.perSecond, cpuUsPerEvent: r.cpuMsPerEvent * 1000, dbCpuUsPerEvent: r.dbCpuMsPerEvent === null ? null : r.dbCpuMsPerEvent * 1000, enqueuePerSecond: r.enqueuePerSecond, notes: r.breakdown };
}

const fmt = (n: number | null) => (n === null ? "-" : Math.round(n).toLocaleString("en-US"));


async function main() {
  const receiver = await startReceiver();
  const load = () => loadavg().map((x) => x.toFixed(1)).join(" ");
  console.log(`outbound benchmark: ${EVENTS} events per run, ${CONNECTIONS} HTTP connections for everyone, ${ROUNDS} interleaved rounds, receiver ${receiver.url} (own process)`);
  const startLoad = load();
  const samples = new Map<Contender, Sample[]>(contenders.map((c) => [c, []]));
  try {
    // Warm-up round on a tenth of the work (JIT, PostgreSQL caches); discarded.
    await runOurs(receiver.url, Math.ceil(EVENTS / 10), C, 256, 250);
    await runGraphile(receiver.url, Math.ceil(EVENTS / 10), C, C + 1);
    await measureCeiling(receiver.url, C, 1);
    for (let round = 1; round <= ROUNDS; round++) {
      for (const c of contenders) {
        const s = await c.run(receiver.url);
        samples.get(c)!.push(s);
        process.stdout.write(`  round ${round}: ${c.name}: ${fmt(s.perSecond)}/s\n`);
      }
    }
  } finally {
    await receiver.stop();
  }
  console.log(`load average at start ${startLoad}, at end ${load()} (cores: ${availableParallelism()}); a shared machine skews every row, the interleaved medians less so`);

  const med = (c: Contender) => median(samples.get(c)!.map((s) => s.perSecond));
  // CPU per event moves far less with the machine's load than throughput does: the process's own
  // CPU (relay or worker, HTTP client included) and that of the PostgreSQL backends serving it.
  const rows = [["contender", "events/s (median)", "min", "max", "enqueue/s", "process CPU µs/event", "PostgreSQL CPU µs/event"]];
  for (const c of contenders) {
    const ss = samples.get(c)!;
    const per = ss.map((s) => s.perSecond);
    const enq = ss.map((s) => s.enqueuePerSecond).filter((x): x is number => x !== null);
    const cpu = ss.map((s) => s.cpuUsPerEvent).filter((x): x is number => x !== null);
    const db = ss.map((s) => s.dbCpuUsPerEvent).filter((x): x is number => x !== null);
    rows.push([c.name, fmt(med(c)), fmt(Math.min(...per)), fmt(Math.max(...per)), enq.length ? fmt(median(enq)) : "-", cpu.length ? fmt(median(cpu)) : "-", db.length ? fmt(median(db)) : "-"]);
  }
  console.log("");
  printTable(rows);

  const best = (kind: Contender["kind"]) => contenders.filter((c) => c.kind === kind).reduce((a, b) => (med(a) >= med(b) ? a : b));
  const ours = best("ours");
  const oursDefault = contenders[0]!;
  const graphile = best("graphile");
  const ceiling = contenders[contenders.length - 1]!;
  const transport = contenders[contenders.length - 2]!;
  console.log("");
  const ratio = (a: Contender, b: Contender) => med(a) / med(b);
  console.log(`ours (best) / graphile-worker (best):   ${ratio(ours, graphile).toFixed(2)}x   target >= 2x: ${ratio(ours, graphile) >= 2 ? "met" : "NOT met"}`);
  console.log(`ours (defaults) / graphile-worker (best): ${ratio(oursDefault, graphile).toFixed(2)}x`);
  console.log(`ours (best) / receiver ceiling:          ${(ratio(ours, ceiling) * 100).toFixed(0)}%   target >= 70%: ${ratio(ours, ceiling) >= 0.7 ? "met" : "NOT met"}`);
  console.log(`our transport alone / receiver ceiling:  ${(ratio(transport, ceiling) * 100).toFixed(0)}%`);
  console.log("\nwhere the time goes (last round):");
  for (const c of contenders) {
    const last = samples.get(c)!.at(-1)!;
    console.log(`  ${c.name}`);
    for (const line of last.notes) console.log(`    - ${line}`);
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(`benchmark failed: ${(error as Error).stack ?? error}`);
  process.exit(1);
});
