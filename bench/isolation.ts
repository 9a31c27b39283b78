/**
 * Endpoint isolation benchmark (issue 15, Must-show 1; not a test): does an endpoint that hangs
 * delay everyone else's webhooks? One relay with the platform's defaults (but the attempt timeout,
 * BENCH_TIMEOUT_MS) on a fresh PostgreSQL database; receivers on 127.0.0.1, one origin each:
 *   - one endpoint that never answers (every attempt runs to the timeout), with a backlog of
 *     BENCH_BACKLOG deliveries enqueued first; one endpoint that answers at once, whose events are
 *     enqueued after the backlog at a steady pace;
 *   - the same without the hanging endpoint (the baseline);
 *   - 100 endpoints of which 10 hang (each with a tenth of the backlog), against the same 90
 *     healthy endpoints alone;
 *   - at scale (issue 28, Must-show 4): 1 000 endpoints of which 100 hang, with 20 deliveries
 *     queued each (BENCH_BACKLOG / 100), then one event for each of the 900 healthy ones, against
 *     the 900 alone; with one relay, and with four sharing the database.
 * It prints the healthy endpoints' delivery latency (enqueue → request at the receiver),
 * p50 and p99, beside the baseline. Targets: the healthy p99 within 1 s of its baseline (within
 * 100 ms at scale).
 *
 *   npm run bench:isolation
 *   env: BENCH_TIMEOUT_MS (3000), BENCH_BACKLOG (2000), BENCH_HEALTHY_EVENTS (200), BENCH_SECONDS (6),
 *        BENCH_PAIRS (all; e.g. 3,4: only the at-scale pairs)
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { loadavg } from "node:os";
import { openDatabase } from "../shared/db/open.js";
import type { Database } from "../shared/db/port.js";
import { enqueueMany } from "../shared/outbound/enqueue.js";
import { createRelay } from "../shared/outbound/relay.js";
import { createSubscription } from "../shared/outbound/subscriptions.js";
import { createTransport } from "../shared/outbound/transport.js";
import { freshDatabase } from "./outbound/support.js";
import { printTable } from "./table.js";
import { useThrowawayEncryptionKey } from "./throwawayKey.js";
import { runBench } from "./runBench.js";

useThrowawayEncryptionKey();

const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 3000);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 2000);
const HEALTHY_EVENTS = Number(process.env.BENCH_HEALTHY_EVENTS ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);

interface Endpoint { url: string; server: Server; hangs: boolean; received: number }

/** A receiver: answers 204 at once, or never (the request stays open until the relay gives up). */
async function endpoint(hangs: boolean, onRequest: (eventId: string) => void): Promise<Endpoint> {
  const e: Endpoint = { url: "", server: createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      e.received += 1;
      if (hangs) return; // never answered
      onRequest(String(req.headers["webhook-id"] ?? "").split(":")[0]!);
      res.writeHead(204).end();
    });
  }), hangs, received: 0 };
  await new Promise<void>((r) => e.server.listen(0, "127.0.0.1", r));
  e.url = `http://127.0.0.1:${(e.server.address() as AddressInfo).port}/hook`;
  return e;
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

interface Scenario {
  name: string;
  healthy: number;
  hanging: number;
  /** Healthy events in all. Default: BENCH_HEALTHY_EVENTS per 10 healthy endpoints. */
  healthyEvents?: number;
  /** Relays sharing the database. Default: 1. */
  relays?: number;
}
interface Outcome { p50: number; p99: number; max: number; delivered: number; hangingAttempts: number; seconds: number }

async function run(s: Scenario): Promise<Outcome> {
  const fresh = await freshDatabase("bench_isolation");
  const db: Database = await openDatabase({ databaseUrl: fresh.url, poolSize: 10 });
  const enqueuedAt = new Map<string, number>();
  const latencies: number[] = [];
  const trace: [number, number][] = [];
  /** BENCH_TRACE: each enqueue transaction's start (ms into the run) and how long until its commit was answered. */
  const commits: [number, number][] = [];
  const traceStart = performance.now();
  const onRequest = (eventId: string) => {
    const t = enqueuedAt.get(eventId);
    if (t !== undefined && enqueuedAt.delete(eventId)) {
      latencies.push(performance.now() - t);
      if (process.env.BENCH_TRACE === "1") trace.push([t - traceStart, performance.now() - t]);
    }
  };
  const endpoints = [
    ...(await Promise.all(Array.from({ length: s.hanging }, () => endpoint(true, onRequest)))),
    ...(await Promise.all(Array.from({ length: s.healthy }, () => endpoint(false, onRequest)))),
  ];
  const transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: TIMEOUT_MS });
  const relayDbs: Database[] = [db];
  for (let i = 1; i < (s.relays ?? 1); i++) relayDbs.push(await openDatabase({ databaseUrl: fresh.url, poolSize: 10 }));
  const relays = relayDbs.map((relayDb) => createRelay({ db: relayDb, transport }));
  try {
    // One event type per endpoint, so each event goes to exactly one subscription.
    for (let from = 0; from < endpoints.length; from += 50) {
      await Promise.all(endpoints.slice(from, from + 50).map((e, k) => createSubscription(db, { url: e.url, eventTypes: [`ep${from + k}.*`] })));
    }
    const hangingEach = s.hanging ? Math.ceil(BACKLOG / s.hanging) : 0;
    for (let h = 0; h < s.hanging; h++) {
      for (let from = 0; from < hangingEach; from += 500) {
        const n = Math.min(500, hangingEach - from);
        await db.transaction((tx) => enqueueMany(tx, Array.from({ length: n }, (_, k) => ({ id: `stuck-${h}-${from + k}`, type: `ep${h}.x`, data: { k } }))));
      }
    }
    await Promise.all(relays.map((r) => r.start()));
    const started = performance.now();
    // The healthy endpoints' events, round the endpoints, at a steady pace over SECONDS.
    const total = s.healthyEvents ?? HEALTHY_EVENTS * Math.max(1, Math.round(s.healthy / 10));
    const perTick = Math.max(1, Math.ceil(total / (SECONDS * 20)));
    for (let sent = 0; sent < total; sent += perTick) {
      const batch = Array.from({ length: Math.min(perTick, total - sent) }, (_, k) => {
        const n = sent + k;
        return { id: `ok-${n}`, type: `ep${s.hanging + (n % s.healthy)}.x`, data: { n } };
      });
      // Timed from the start of the enqueue transaction: its commit wakes the relay, which may
      // deliver before this process gets the commit's answer.
      const now = performance.now();
      for (const b of batch) enqueuedAt.set(b.id, now);
      await db.transaction((tx) => enqueueMany(tx, batch));
      if (process.env.BENCH_TRACE === "1") commits.push([now - traceStart, performance.now() - now]);
      await new Promise((r) => setTimeout(r, 50));
    }
    const deadline = performance.now() + 120_000;
    while (latencies.length < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const seconds = (performance.now() - started) / 1000;
    if (process.env.BENCH_TRACE === "1") {
      // The worst latency per 250 ms of enqueue time, from the relays' start (process ms in brackets).
      const bins = new Map<number, number>();
      for (const [at, l] of trace) { const b = Math.floor((at - (started - traceStart)) / 250); bins.set(b, Math.max(bins.get(b) ?? 0, l)); }
      console.log(`    ${s.name}: worst per 250 ms from the start [${Math.round(started)}]: ${[...bins].sort((a, b) => a[0] - b[0]).map(([b, l]) => `${b * 250}:${Math.round(l)}`).join(" ")}`);
      const slowCommits = [...commits].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([at, l]) => `${Math.round(at)}+${Math.round(l)}`);
      console.log(`    ${s.name}: slowest enqueue commits (started at ms + ms): ${slowCommits.join(" ")}`);
      const slow = trace.sort((a, b) => b[1] - a[1]).slice(0, 12).map(([at, l]) => `${Math.round(at)}+${Math.round(l)}`);
      const failed = await db.query("SELECT a.result, a.error_class, count(*)::int AS n, max(a.latency_ms) AS max_ms FROM outbound_attempts a JOIN outbound_deliveries d ON d.id = a.delivery_id WHERE d.event_id LIKE 'ok-%' GROUP BY 1, 2");
      console.log(`    healthy attempts: ${JSON.stringify(failed.rows)}`);
      console.log(`    ${s.name}: slowest (enqueued at ms + latency ms): ${slow.join(" ")}; started ${Math.round(started - traceStart)}; this run began ${Math.round(traceStart)} ms after the process started`);
    }
    if (latencies.length < total) throw new Error(`${s.name}: only ${latencies.length} of ${total} healthy events arrived within 120 s`);
    return {
      p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies), delivered: latencies.length,
      hangingAttempts: endpoints.filter((e) => e.hangs).reduce((n, e) => n + e.received, 0), seconds,
    };
  } finally {
    await Promise.all(relays.map((r) => r.stop().catch(() => {})));
    await transport.close().catch(() => {});
    for (const e of endpoints) { e.server.closeAllConnections(); e.server.close(); }
    for (const d of relayDbs) await d.close();
    await fresh.drop();
  }
}

async function main() {
  console.log(`isolation benchmark: attempt timeout ${TIMEOUT_MS} ms, backlog ${BACKLOG} at the hanging endpoint(s), healthy events paced over ${SECONDS} s; platform defaults; load ${loadavg()[0]!.toFixed(1)}`);
  const atScale = (relays: number): [Scenario, Scenario] => {
    const r = relays === 1 ? "one relay" : `${relays} relays`;
    return [{ name: `900 healthy endpoints alone, ${r}`, healthy: 900, hanging: 0, healthyEvents: 900, relays },
      { name: `900 healthy + 100 hanging endpoints, ${r}`, healthy: 900, hanging: 100, healthyEvents: 900, relays }];
  };
  const all: [Scenario, Scenario][] = [
    [{ name: "1 healthy endpoint alone", healthy: 1, hanging: 0 }, { name: "1 healthy + 1 hanging endpoint", healthy: 1, hanging: 1 }],
    [{ name: "90 healthy endpoints alone", healthy: 90, hanging: 0 }, { name: "90 healthy + 10 hanging endpoints", healthy: 90, hanging: 10 }],
    atScale(1),
    atScale(4),
  ];
  // BENCH_PAIRS=3,4 runs only those pairs (1-based), e.g. the at-scale rows.
  const only = process.env.BENCH_PAIRS?.split(",").map(Number);
  const pairs = only ? all.filter((_, i) => only.includes(i + 1)) : all;
  const ms = (x: number) => `${Math.round(x).toLocaleString("en-US")} ms`;
  const rows = [["run", "healthy events", "p50", "p99", "max", "p99 − baseline p99", "attempts at hanging endpoints"]];
  for (const [base, test] of pairs) {
    // Each pair runs twice, baseline then test, and the second pair is reported (the first warms
    // the JIT and PostgreSQL's caches); both rounds are printed.
    let b!: Outcome, t!: Outcome;
    for (let round = 0; round < 2; round++) {
      b = await run(base);
      t = await run(test);
      console.log(`  round ${round + 1}: ${base.name} p99 ${ms(b.p99)}; ${test.name} p99 ${ms(t.p99)}`);
    }
    rows.push([base.name, String(b.delivered), ms(b.p50), ms(b.p99), ms(b.max), "", "-"]);
    const target = test.healthy >= 900 ? 100 : 1000;
    rows.push([test.name, String(t.delivered), ms(t.p50), ms(t.p99), ms(t.max), `${t.p99 - b.p99 >= 0 ? "+" : ""}${ms(t.p99 - b.p99)} (target ≤ ${ms(target)}: ${t.p99 - b.p99 <= target ? "met" : "NOT met"})`, String(t.hangingAttempts)]);
  }
  console.log("");
  printTable(rows);
  console.log(`load average at end ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
}

runBench("bench:isolation", main);
