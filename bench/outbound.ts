/**
 * Outbound delivery benchmark (not a test): in one run on this machine, events per second
 * delivered to a local no-op receiver (a node:http process of its own) by
 *   - one of our relays (outbox on PostgreSQL → signed POST), its defaults and a smaller setting (fewer re-sends after a crash),
 *   - graphile-worker 0.17 running the same workload (one job per event, same HTTP transport),
 *     with the batching its performance page advises,
 *   - nobody: the receiver's own ceiling, measured with autocannon at the same concurrency,
 *   - our transport alone (no database), to separate HTTP cost from outbox cost.
 * Every contender uses the same number of HTTP connections. Each run gets a fresh PostgreSQL
 * database, created and dropped here. The machine is shared, so contenders are interleaved over
 * several rounds and the median of each is reported.
 *
 * Per contender it also reports the CPU spent per event by its own process (relay, worker, HTTP
 * client or autocannon), by the PostgreSQL backends serving it and by the receiver, over exactly
 * that run's measured window. All of them share this machine's cores, so
 * cores × 1e6 / (their µs per event summed) is a CPU bound on the contender's rate ("CPU bound
 * events/s"; "bound used %" = measured / bound). From the medians it then works out what the
 * targets (ours ≥ 2× graphile-worker's best, ours ≥ 70 % of the receiver ceiling) would need:
 * the CPU per event left for the outbox once the HTTP cost alone (transport-alone row) is paid,
 * against what ours spends. Bounds at 100 % of every core, not predictions (bench/outbound/budget.ts).
 * Over the same window it reads the whole machine's CPU (/proc/stat): what other processes took per
 * event (other tenants of this shared machine, PostgreSQL's background writers) and how long the
 * cores sat idle, so the part of the bound a contender did not reach is split into CPU others took
 * and time nobody used (waits: round trips, batching, locks). "Where the next microsecond is" then
 * lists each contender's CPU per event by part, with what one microsecond less would add to its bound.
 *
 *   npm run bench:outbound
 *   env: BENCH_EVENTS (10000), BENCH_CONNECTIONS (64), BENCH_ROUNDS (3), BENCH_CEILING_SECONDS (5)
 *   BENCH_ONLY=flow: only the relay's defaults against the baseline (flow-nohttp: both with the instant fake transport); BENCH_ONLY=enqueue: only the enqueue cost (bench/enqueue.ts);
 *   BENCH_ONLY=transformation: only the defaults beside a transformation on every delivery
 *   BENCH_ONLY=telemetry: only the defaults with the OpenTelemetry SDK off beside on, one fresh process per side per round (bench/outbound/telemetrySide.ts)
 */
import { availableParallelism, loadavg } from "node:os";
import { cpuBound, targetNeeds, type Cost } from "./outbound/budget.js";
import { measureCeiling } from "./outbound/ceiling.js";
import { runGraphile } from "./outbound/graphile.js";
import { runOurs } from "./outbound/ours.js";
import { BASELINE_COMMIT, loadBaseline } from "./outbound/baseline.js";
import { type MachineCpu, type ReceiverStats, type RunResult, startReceiver } from "./outbound/support.js";
import { measureTransport } from "./outbound/transportOnly.js";
import { closeTelemetryPeer, runTelemetrySide } from "./outbound/telemetrySide.js";
import { median, printTable } from "./table.js";
import { useThrowawayEncryptionKey } from "./throwawayKey.js";
import { runBench } from "./runBench.js";

useThrowawayEncryptionKey();

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CEILING_SECONDS = Number(process.env.BENCH_CEILING_SECONDS ?? 5);

interface Sample { perSecond: number; events: number; cpuUsPerEvent: number; dbCpuUsPerEvent: number | null; rxCpuUsPerEvent: number | null; enqueuePerSecond: number | null; machine: MachineCpu | null; notes: string[] }
/** `rx` reads the receiver's stats, so each run records the receiver's CPU over its own window. */
interface Contender { name: string; kind: "ours" | "baseline" | "graphile" | "reference" | "diagnostic"; run: (url: string, rx: ReceiverStats) => Promise<Sample> }

// BENCH_ONLY=enqueue: only the enqueue cost, today against the code before ordered delivery and
// applications (bench/enqueue.ts), without any relay.
if (process.env.BENCH_ONLY === "enqueue") {
  const { main: enqueueBench } = await import("./enqueue.js");
  runBench("bench:outbound (BENCH_ONLY=enqueue)", enqueueBench);
  await new Promise(() => {}); // runBench exits; the relay bench below must not start
}

const C = CONNECTIONS;
/** A transformation a customer might write: reshape the body, add a header (docs/transformations.md). */
const BENCH_TRANSFORMATION = `(event) => ({ body: { kind: event.type, at: event.timestamp, payload: event.data }, headers: { "x-kind": event.type } })`;
const baseline = await loadBaseline();
/** The relay's defaults with the instant fake transport: its own bookkeeping without the HTTP exchange. */
const oursNoHttp: Contender = { name: `diagnostic: our relay, defaults, no HTTP (instant fake transport)`, kind: "diagnostic", run: (u, rx) => runOurs(u, EVENTS, C, 1024, 500, { noHttp: true, receiver: rx }).then(fromRun) };
const allContenders: Contender[] = [
  // The relay's defaults (concurrency 1024, batch 500, 2 completion writers), HTTP capped at the connections.
  { name: `our relay, defaults (concurrency 1024, batch 500, 2 writers)`, kind: "ours", run: (u, rx) => runOurs(u, EVENTS, C, 1024, 500, { receiver: rx }).then(fromRun) },
  // The same before the flow control (fair claims, in-flight limits: issue 15), read from git.
  { name: `our relay at the baseline commit (${BASELINE_COMMIT.slice(0, 7)}), defaults`, kind: "baseline", run: (u, rx) => runOurs(u, EVENTS, C, 1024, 500, { receiver: rx, baseline }).then(fromRun) },
  // Issue 30: a transformation on every delivery (run in the QuickJS sandbox, compiled once),
  // beside the defaults above: what the sandbox costs per delivery.
  { name: `our relay, defaults, a transformation on every delivery (QuickJS sandbox)`, kind: "ours", run: (u, rx) => runOurs(u, EVENTS, C, 1024, 500, { receiver: rx, transformation: BENCH_TRANSFORMATION }).then(fromRun) },
  // Holding fewer: a crash holds up at most 256 deliveries for a lease, for some throughput.
  { name: `our relay, concurrency 256, batch 250 (fewer re-sends after a crash)`, kind: "ours", run: (u, rx) => runOurs(u, EVENTS, C, 256, 250, { receiver: rx }).then(fromRun) },
  { name: `graphile-worker, concurrentJobs ${C}, localQueue ${C + 1}`, kind: "graphile", run: (u, rx) => runGraphile(u, EVENTS, C, C + 1, { receiver: rx }).then(fromRun) },
  { name: `graphile-worker, concurrentJobs ${C}, localQueue 500`, kind: "graphile", run: (u, rx) => runGraphile(u, EVENTS, C, 500, { receiver: rx }).then(fromRun) },
  oursNoHttp,
  { name: `diagnostic: graphile-worker localQueue ${C + 1}, no-op task`, kind: "diagnostic", run: (u, rx) => runGraphile(u, EVENTS, C, C + 1, { noHttp: true, receiver: rx }).then(fromRun) },
  { name: "our transport alone (no database)", kind: "reference", run: (u, rx) => measureTransport(u, C, CEILING_SECONDS, rx).then((r) => ({
    perSecond: r.perSecond, events: r.sent, cpuUsPerEvent: r.cpuMsPerEvent * 1000, dbCpuUsPerEvent: null, rxCpuUsPerEvent: rxUs(r.receiver, r.sent), enqueuePerSecond: null, machine: r.receiver?.machine ?? null,
    notes: [`avg latency ${r.avgLatencyMs.toFixed(1)} ms`, postCheck(r.receiver, r.sent)],
  })) },
  { name: `receiver ceiling (autocannon, ${C} connections)`, kind: "reference", run: (u, rx) => measureCeiling(u, C, CEILING_SECONDS, rx).then((r) => ({
    perSecond: r.perSecond, events: r.total, cpuUsPerEvent: r.cpuMsPerEvent * 1000, dbCpuUsPerEvent: null, rxCpuUsPerEvent: rxUs(r.receiver, r.total), enqueuePerSecond: null, machine: r.receiver?.machine ?? null,
    notes: [`p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, errors ${r.errors}`, `autocannon CPU (this process) ${Math.round(r.cpuMsPerEvent * 1000)} µs per request; ${postCheck(r.receiver, r.total)}`],
  })) },
];

// Issue 33: what turning telemetry on costs per delivery. Not in the full run: each side is a
// process of its own (the SDK is process-global; why: bench/outbound/telemetrySide.ts), both with
// the transport instrumented as the platform's worker has it.
const telemetryContenders: Contender[] = [
  { name: `our relay, defaults, telemetry off (no SDK: the API's no-op spans and metrics)`, kind: "ours", run: (u, rx) => runTelemetrySide("off", u, rx, EVENTS, C).then(fromRun) },
  { name: `our relay, defaults, telemetry on (OTLP/HTTP to a local test peer, every span sampled, metrics exported)`, kind: "ours", run: (u, rx) => runTelemetrySide("on", u, rx, EVENTS, C).then(fromRun) },
];

/** BENCH_ONLY=flow runs only our relay's defaults against the baseline (the flow-control check, a shorter run). */
const contenders = process.env.BENCH_ONLY === "flow" ? allContenders.slice(0, 2)
  // BENCH_ONLY=flow-nohttp: the same two with the instant fake transport, where the relay's own
  // bookkeeping is most of the CPU (a change of a few µs per event shows above the noise).
  : process.env.BENCH_ONLY === "flow-nohttp" ? [oursNoHttp, {
    name: `diagnostic: our relay at the baseline commit (${BASELINE_COMMIT.slice(0, 7)}), no HTTP`, kind: "baseline",
    run: (u, rx) => runOurs(u, EVENTS, C, 1024, 500, { noHttp: true, receiver: rx, baseline }).then(fromRun),
  } satisfies Contender]
  // BENCH_ONLY=transformation: the defaults beside a transformation on every delivery (issue 30).
  : process.env.BENCH_ONLY === "transformation" ? [allContenders[0]!, allContenders[2]!]
  : process.env.BENCH_ONLY === "telemetry" ? telemetryContenders : allContenders;

function fromRun(r: RunResult): Sample {
  const us = (ms: number | null) => (ms === null ? null : ms * 1000);
  return { perSecond: r.perSecond, events: r.events, cpuUsPerEvent: r.cpuMsPerEvent * 1000, dbCpuUsPerEvent: us(r.dbCpuMsPerEvent), rxCpuUsPerEvent: us(r.receiverCpuMsPerEvent), enqueuePerSecond: r.enqueuePerSecond, machine: r.machine, notes: r.breakdown };
}

const rxUs = (rx: { cpuMs: number } | null, events: number) => (rx === null ? null : (rx.cpuMs / events) * 1000);
/** The receiver's POST count against the sender's, as a check that both measured the same window. */
const postCheck = (rx: { posts: number; cpuMs: number } | null, sent: number) =>
  rx === null ? "receiver not read" : `receiver: ${Math.round((rx.cpuMs / sent) * 1000)} µs per request, ${rx.posts} POSTs counted for ${sent} sent`;

const fmt = (n: number | null) => (n === null ? "-" : Math.round(n).toLocaleString("en-US"));
/** CPU per event of every other process on the machine over the run: all busy CPU less what the row counts (its process, backends, receiver). */
const othersUs = (s: Sample) => (s.machine === null ? null : (s.machine.busyMs / s.events) * 1000 - s.cpuUsPerEvent - (s.dbCpuUsPerEvent ?? 0) - (s.rxCpuUsPerEvent ?? 0));
/** Share of the cores' time nobody used over the run. */
const idleShare = (s: Sample) => (s.machine === null || s.machine.totalMs === 0 ? null : 1 - s.machine.busyMs / s.machine.totalMs);


async function main() {
  const receiver = await startReceiver();
  const load = () => loadavg().map((x) => x.toFixed(1)).join(" ");
  console.log(`outbound benchmark: ${EVENTS} events per run, ${CONNECTIONS} HTTP connections for everyone, ${ROUNDS} interleaved rounds, receiver ${receiver.url} (own process)`);
  const startLoad = load();
  const samples = new Map<Contender, Sample[]>(contenders.map((c) => [c, []]));
  try {
    // Warm-up round on a tenth of the work (JIT, PostgreSQL caches); discarded. The telemetry
    // sides warm up in their own processes.
    if (contenders !== telemetryContenders) {
      await runOurs(receiver.url, Math.ceil(EVENTS / 10), C, 1024, 500);
      await runOurs(receiver.url, Math.ceil(EVENTS / 10), C, 1024, 500, { baseline });
    }
    if (contenders === allContenders) {
      await runGraphile(receiver.url, Math.ceil(EVENTS / 10), C, C + 1);
      await measureCeiling(receiver.url, C, 1);
    }
    for (let round = 1; round <= ROUNDS; round++) {
      // ABBA: every other round runs the contenders in reverse, so none always runs first or last.
      for (const c of round % 2 === 1 ? contenders : [...contenders].reverse()) {
        const s = await c.run(receiver.url, receiver.stats);
        samples.get(c)!.push(s);
        process.stdout.write(`  round ${round}: ${c.name}: ${fmt(s.perSecond)}/s\n`);
      }
    }
  } finally {
    await receiver.stop();
    await closeTelemetryPeer();
    baseline.remove();
  }
  console.log(`load average at start ${startLoad}, at end ${load()} (cores: ${availableParallelism()}); a shared machine skews every row, the interleaved medians less so`);

  const med = (c: Contender) => median(samples.get(c)!.map((s) => s.perSecond));
  const medOf = (c: Contender, pick: (s: Sample) => number | null) => {
    const xs = samples.get(c)!.map(pick).filter((x): x is number => x !== null);
    return xs.length ? median(xs) : null;
  };
  // CPU per event moves far less with the machine's load than throughput does: the process's own
  // CPU (relay, worker, HTTP client or autocannon), the PostgreSQL backends' and the receiver's.
  // A missing PostgreSQL reading counts as 0 in the bound (rows without a database).
  const cost = (c: Contender): Cost => ({ perSecond: med(c), processUs: medOf(c, (s) => s.cpuUsPerEvent)!, dbUs: medOf(c, (s) => s.dbCpuUsPerEvent) ?? 0, receiverUs: medOf(c, (s) => s.rxCpuUsPerEvent) ?? 0 });
  const cores = availableParallelism();
  const rows = [["contender", "events/s (median)", "min", "max", "enqueue/s", "process CPU µs/event", "PostgreSQL CPU µs/event", "receiver CPU µs/event", "CPU bound events/s", "bound used %", "others' CPU µs/event", "cores idle %"]];
  const pct = (x: number | null) => (x === null ? "-" : `${(x * 100).toFixed(0)}%`);
  for (const c of contenders) {
    const per = samples.get(c)!.map((s) => s.perSecond);
    const bound = cpuBound(cores, cost(c));
    rows.push([c.name, fmt(med(c)), fmt(Math.min(...per)), fmt(Math.max(...per)), fmt(medOf(c, (s) => s.enqueuePerSecond)), fmt(medOf(c, (s) => s.cpuUsPerEvent)),
      fmt(medOf(c, (s) => s.dbCpuUsPerEvent)), fmt(medOf(c, (s) => s.rxCpuUsPerEvent)), fmt(bound), `${((med(c) / bound) * 100).toFixed(0)}%`, fmt(medOf(c, othersUs)), pct(medOf(c, idleShare))]);
  }
  console.log("");
  printTable(rows);
  console.log(`CPU bound = ${cores} cores × 1e6 / (process + PostgreSQL + receiver µs/event): the rate if CPU were the only limit, every core 100 % busy with this work`);
  console.log("others' CPU: every other process on the machine over the same window (other tenants, PostgreSQL's background writers), per event; cores idle: the share of the cores' time nobody used (the contender waited)");
  console.log(`\nwhere the next microsecond is (medians; share of the ${cores}-core CPU bound reached; what 1 µs less CPU per event adds to the bound):`);
  for (const line of nextMicrosecond(contenders.map((c) => ({ name: c.name, cost: cost(c), othersUs: medOf(c, othersUs), idle: medOf(c, idleShare) })), cores)) console.log(`  ${line}`);

  // Side by side, per round and of the medians: `a` against `b`, when both ran.
  const against = (a: Contender, b: Contender, label: string, target?: number) => {
    if (!samples.has(a) || !samples.has(b)) return;
    const perRound = samples.get(a)!.map((s, i) => s.perSecond / samples.get(b)!.at(i)!.perSecond);
    const r = med(a) / med(b);
    const verdict = target === undefined ? "" : `   target >= ${target * 100}%: ${r >= target ? "met" : "NOT met"}`;
    console.log(`\n${label}: ${(r * 100).toFixed(1)}% (rounds: ${perRound.map((x) => `${(x * 100).toFixed(0)}%`).join(", ")})${verdict}`);
  };
  // The flow-control check (issue 15): today's defaults against the relay before it, same run.
  against(allContenders[0]!, allContenders[1]!, `ours (defaults) / the relay at ${BASELINE_COMMIT.slice(0, 7)}`, 0.95);
  if (process.env.BENCH_ONLY === "flow-nohttp") against(contenders[0]!, contenders[1]!, `ours, no HTTP / the relay at ${BASELINE_COMMIT.slice(0, 7)}, no HTTP`);
  // Issue 30: a transformation on every delivery against none.
  against(allContenders[2]!, allContenders[0]!, "ours with a transformation on every delivery / ours without");
  // Issue 33: telemetry on against off, and what it adds to the relay's own CPU per delivery.
  const [telemetryOff, telemetryOn] = telemetryContenders as [Contender, Contender];
  against(telemetryOn, telemetryOff, "ours with telemetry on / off");
  if (samples.has(telemetryOn)) {
    const cpu = (c: Contender) => medOf(c, (s) => s.cpuUsPerEvent)!;
    const perRound = samples.get(telemetryOn)!.map((s, i) => `${fmt(s.cpuUsPerEvent)} vs ${fmt(samples.get(telemetryOff)!.at(i)!.cpuUsPerEvent)}`);
    console.log(`process CPU per delivery, on vs off: ${fmt(cpu(telemetryOn))} vs ${fmt(cpu(telemetryOff))} µs (${cpu(telemetryOn) >= cpu(telemetryOff) ? "+" : "−"}${fmt(Math.abs(cpu(telemetryOn) - cpu(telemetryOff)))} µs; rounds: ${perRound.join(", ")}); PostgreSQL ${fmt(medOf(telemetryOn, (s) => s.dbCpuUsPerEvent))} vs ${fmt(medOf(telemetryOff, (s) => s.dbCpuUsPerEvent))}`);
    for (const line of samples.get(telemetryOn)!.at(-1)!.notes.filter((n) => n.startsWith("OTLP peer"))) console.log(`  last round: ${line}`);
  }
  if (contenders !== allContenders) return;

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

  console.log(`\nwhat the targets would need (CPU bounds from the medians above, at 100 % of ${cores} cores; the outbox = relay bookkeeping + PostgreSQL):`);
  for (const line of [
    ...targetNeeds(`2× graphile-worker's best (2 × ${fmt(med(graphile))})`, 2 * med(graphile), cores, cost(transport), cost(ours)),
    ...targetNeeds(`70 % of the receiver ceiling (0.7 × ${fmt(med(ceiling))})`, 0.7 * med(ceiling), cores, cost(transport), cost(ours)),
  ]) console.log(`  ${line}`);
  console.log(`  the no-database transport alone reaches ${(ratio(transport, ceiling) * 100).toFixed(0)}% of the ceiling (its CPU bound: ${fmt(cpuBound(cores, cost(transport)))} events/s = ${((cpuBound(cores, cost(transport)) / med(ceiling)) * 100).toFixed(0)}% of the ceiling)`);
  console.log(`  ours (best, ${ours.name}) measured ${fmt(med(ours))} events/s against its own CPU bound of ${fmt(cpuBound(cores, cost(ours)))}`);
  console.log("\nwhere the time goes (last round):");
  for (const c of contenders) {
    const last = samples.get(c)!.at(-1)!;
    console.log(`  ${c.name}`);
    for (const line of last.notes) console.log(`    - ${line}`);
  }
}

/**
 * Per contender: its CPU per event by part (largest first, with its share), the share of the CPU
 * bound it reached, what the rest went to (others' CPU, idle cores), and what one microsecond less
 * would add to the bound (d(bound)/dµs = cores × 1e6 / total²).
 */
function nextMicrosecond(rows: { name: string; cost: Cost; othersUs: number | null; idle: number | null }[], cores: number): string[] {
  return rows.flatMap(({ name, cost: c, othersUs: others, idle }) => {
    const total = c.processUs + c.dbUs + c.receiverUs;
    const bound = cpuBound(cores, c);
    const parts = ([["process", c.processUs], ["PostgreSQL", c.dbUs], ["receiver", c.receiverUs]] as [string, number][])
      .filter(([, us]) => us >= 0.5).sort((a, b) => b[1] - a[1])
      .map(([part, us]) => `${part} ${fmt(us)} (${((us / total) * 100).toFixed(0)}%)`);
    const perMicrosecond = (cores * 1e6) / (total * total);
    const reached = c.perSecond / bound;
    const rest = reached >= 1 ? "" : `; the ${((1 - reached) * 100).toFixed(0)}% not reached: ${others === null ? "others' CPU not read" : `others' CPU ${fmt(others)} µs/event`}, cores idle ${idle === null ? "?" : `${(idle * 100).toFixed(0)}%`}`;
    return [`${name}: ${fmt(total)} µs/event = ${parts.join(" + ")}`, `    bound ${fmt(bound)}/s, reached ${(reached * 100).toFixed(0)}% (${fmt(c.perSecond)}/s)${rest}; 1 µs less → +${fmt(perMicrosecond)}/s at the bound`];
  });
}

runBench("bench:outbound", main);
