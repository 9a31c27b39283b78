/**
 * Endpoint isolation benchmark (issue 15, Must-show 1; not a test): does an endpoint that hangs
 * delay everyone else's webhooks? One relay with the platform's defaults (but the attempt timeout,
 * BENCH_TIMEOUT_MS) on a fresh PostgreSQL database; receivers on 127.0.0.1, one origin each:
 *   - one endpoint that never answers (every attempt runs to the timeout), with a backlog of
 *     BENCH_BACKLOG deliveries enqueued first; one endpoint that answers at once, whose events are
 *     enqueued after the backlog at a steady pace;
 *   - the same without the hanging endpoint (the baseline);
 *   - 100 endpoints of which 10 hang (each with a tenth of the backlog), against the same 90
 *     healthy endpoints alone.
 * It prints the healthy endpoints' delivery latency (enqueue → request at the receiver),
 * p50 and p99, beside the baseline. Target: the healthy p99 within 1 s of its baseline.
 *
 *   npm run bench:isolation
 *   env: BENCH_TIMEOUT_MS (3000), BENCH_BACKLOG (2000), BENCH_HEALTHY_EVENTS (200), BENCH_SECONDS (6)
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

interface Scenario { name: string; healthy: number; hanging: number }
interface Outcome { p50: number; p99: number; max: number; delivered: number; hangingAttempts: number; seconds: number }

async function run(s: Scenario): Promise<Outcome> {
  const fresh = await freshDatabase("bench_isolation");
  const db: Database = await openDatabase({ databaseUrl: fresh.url, poolSize: 10 });
  const enqueuedAt = new Map<string, number>();
  const latencies: number[] = [];
  const onRequest = (eventId: string) => {
    const t = enqueuedAt.get(eventId);
    if (t !== undefined && enqueuedAt.delete(eventId)) latencies.push(performance.now() - t);
  };
  const endpoints = [
    ...(await Promise.all(Array.from({ length: s.hanging }, () => endpoint(true, onRequest)))),
    ...(await Promise.all(Array.from({ length: s.healthy }, () => endpoint(false, onRequest)))),
  ];
  const transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: TIMEOUT_MS });
  const relay = createRelay({ db, transport });
  try {
    // One event type per endpoint, so each event goes to exactly one subscription.
    for (const [i, e] of endpoints.entries()) await createSubscription(db, { url: e.url, eventTypes: [`ep${i}.*`] });
    const hangingEach = s.hanging ? Math.ceil(BACKLOG / s.hanging) : 0;
    for (let h = 0; h < s.hanging; h++) {
      for (let from = 0; from < hangingEach; from += 500) {
        const n = Math.min(500, hangingEach - from);
        await db.transaction((tx) => enqueueMany(tx, Array.from({ length: n }, (_, k) => ({ id: `stuck-${h}-${from + k}`, type: `ep${h}.x`, data: { k } }))));
      }
    }
    await relay.start();
    const started = performance.now();
    // The healthy endpoints' events, round the endpoints, at a steady pace over SECONDS.
    const total = HEALTHY_EVENTS * Math.max(1, Math.round(s.healthy / 10));
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
      await new Promise((r) => setTimeout(r, 50));
    }
    const deadline = performance.now() + 120_000;
    while (latencies.length < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const seconds = (performance.now() - started) / 1000;
    if (latencies.length < total) throw new Error(`${s.name}: only ${latencies.length} of ${total} healthy events arrived within 120 s`);
    return {
      p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies), delivered: latencies.length,
      hangingAttempts: endpoints.filter((e) => e.hangs).reduce((n, e) => n + e.received, 0), seconds,
    };
  } finally {
    await relay.stop().catch(() => {});
    await transport.close().catch(() => {});
    for (const e of endpoints) { e.server.closeAllConnections(); e.server.close(); }
    await db.close();
    await fresh.drop();
  }
}

async function main() {
  console.log(`isolation benchmark: attempt timeout ${TIMEOUT_MS} ms, backlog ${BACKLOG} at the hanging endpoint(s), healthy events paced over ${SECONDS} s; one relay, platform defaults; load ${loadavg()[0]!.toFixed(1)}`);
  const pairs: [Scenario, Scenario][] = [
    [{ name: "1 healthy endpoint alone", healthy: 1, hanging: 0 }, { name: "1 healthy + 1 hanging endpoint", healthy: 1, hanging: 1 }],
    [{ name: "90 healthy endpoints alone", healthy: 90, hanging: 0 }, { name: "90 healthy + 10 hanging endpoints", healthy: 90, hanging: 10 }],
  ];
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
    rows.push([test.name, String(t.delivered), ms(t.p50), ms(t.p99), ms(t.max), `${t.p99 - b.p99 >= 0 ? "+" : ""}${ms(t.p99 - b.p99)} (target ≤ 1,000 ms: ${t.p99 - b.p99 <= 1000 ? "met" : "NOT met"})`, String(t.hangingAttempts)]);
  }
  console.log("");
  printTable(rows);
  console.log(`load average at end ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
}

main().then(() => process.exit(0), (error) => {
  console.error(`benchmark failed: ${(error as Error).stack ?? error}`);
  process.exit(1);
});
