/**
 * Our relay on a fresh PostgreSQL database: N events enqueued first (timed separately), then one
 * relay delivers them; the clock stops when the last completion is written (delivered in the DB).
 * The database and transport are wrapped to time where the relay spends its wall-clock time.
 */
import { performance } from "node:perf_hooks";
import { openDatabase } from "../../shared/db/open.js";
import { openHeaders, openSecrets } from "../../shared/crypto/subscriptionSecrets.js";
import type { Database, Queryable, Transaction } from "../../shared/db/port.js";
import { enqueueMany } from "../../shared/outbound/enqueue.js";
import { createRelay } from "../../shared/outbound/relay.js";
import { createSubscription } from "../../shared/outbound/subscriptions.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { instrumentTransport } from "../../shared/telemetry/instrument.js";
import type { Baseline } from "./baseline.js";
import { cpuMsSince, databaseCpu, eventData, freshDatabase, receiverWindow, type ReceiverStats, runResult, type RunResult, waitFor } from "./support.js";


interface Timer { calls: number; ms: number }
const timed = () => ({ claim: { calls: 0, ms: 0 }, complete: { calls: 0, ms: 0 }, http: { calls: 0, ms: 0 } });

/** Wraps `query` so each statement family's wall time is summed (claims vs completion writes). */
function timeQueries<Q extends Queryable>(q: Q, t: ReturnType<typeof timed>): Q {
  const query = q.query.bind(q);
  const wrapped = async (text: string, values?: unknown[]) => {
    const start = performance.now();
    try {
      return await query(text, values);
    } finally {
      const slot: Timer | null = /SKIP LOCKED/.test(text) ? t.claim : /INSERT INTO outbound_attempt(s|_rows)\b/.test(text) ? t.complete : null;
      if (slot) { slot.calls += 1; slot.ms += performance.now() - start; }
    }
  };
  return Object.assign(Object.create(q) as Q, { query: wrapped });
}

function instrument(db: Database, t: ReturnType<typeof timed>): Database {
  const d = timeQueries(db, t);
  return Object.assign(d, {
    // A transaction is a claim (it ran the SKIP LOCKED statement) or a completion write.
    transaction: async <T>(fn: (tx: Transaction) => Promise<T>) => {
      const start = performance.now();
      let claim = false;
      try {
        return await db.transaction((tx) => fn(Object.assign(Object.create(tx) as Transaction, {
          query: (text: string, values?: unknown[]) => {
            if (/SKIP LOCKED/.test(text)) claim = true;
            return tx.query(text, values);
          },
        })));
      } finally {
        const slot = claim ? t.claim : t.complete;
        slot.calls += 1;
        slot.ms += performance.now() - start;
      }
    },
    listen: db.listen.bind(db),
    close: db.close.bind(db),
    kind: db.kind,
  });
}

/**
 * @param connections HTTP connections to the receiver (the transport's pool): the same for every contender.
 * @param concurrency the relay's `concurrency`: deliveries held at once (waiting for an HTTP turn, in
 *   flight, or awaiting their completion write); HTTP attempts in flight are capped at `connections`.
 * @param options.receiver reads the receiver's CPU, so its cost over the relay phase is recorded too.
 * @param options.instrumented wraps the HTTP transport in `instrumentTransport`, as the platform's
 *   worker does (shared/outbound/worker.ts): a span and two metrics per attempt, no-ops without an SDK.
 */
export async function runOurs(receiverUrl: string, events: number, connections: number, concurrency: number, batchSize: number, options: { noHttp?: boolean; completionWriters?: number; httpConcurrency?: number; around?: { start(): Promise<void>; stop(): Promise<void> }; receiver?: ReceiverStats; baseline?: Baseline; transformation?: string; instrumented?: boolean } = {}): Promise<RunResult> {
  const fresh = await freshDatabase("bench_outbox");
  const db = await openDatabase({ databaseUrl: fresh.url, poolSize: 10 });
  try {
    await options.baseline?.prepare(db);
    await createSubscription(db, { url: `${receiverUrl}/ours`, eventTypes: ["bench.*"], ...(options.transformation ? { transformation: options.transformation } : {}) });
    // Enqueued the way graphile-worker's jobs are added below (its batch API, `addJobs`, 500 per
    // call, one call after another): `enqueueMany`, 500 events per transaction.
    const enqStart = performance.now();
    const perTx = 500;
    for (let from = 0; from < events; from += perTx) {
      const batch = Array.from({ length: Math.min(events, from + perTx) - from }, (_, k) => ({ id: `evt_${from + k}`, type: "bench.created", data: eventData(from + k) }));
      await db.transaction((tx) => enqueueMany(tx, batch));
    }
    const enqueueSeconds = (performance.now() - enqStart) / 1000;

    const t = timed();
    const plain = createTransport({ allowedDestinations: ["127.0.0.1"], connectionsPerOrigin: connections });
    const base = options.instrumented ? instrumentTransport(plain) : plain;
    // The no-HTTP variant (a diagnostic, named as such) answers every attempt "delivered" at once:
    // what remains is the outbox's own cost, claims and completion writes.
    const instant = async () => ({ result: "delivered" as const, status: 204, latencyMs: 0, errorClass: null, responseExcerpt: "", retryAfterSeconds: null });
    const transport: Transport = {
      deliver: async (req) => {
        // A baseline from before secrets at rest (issue 17) hands the transport what is stored, now
        // encrypted: decrypt it here, per attempt, as today's relay does itself.
        const sub = req.webhookId.slice(req.webhookId.lastIndexOf(":") + 1);
        const sent = options.baseline ? { ...req, secrets: openSecrets(sub, req.secrets), headers: openHeaders(sub, req.headers ?? {}) } : req;
        const out = options.noHttp ? await instant() : await base.deliver(sent);
        t.http.calls += 1;
        t.http.ms += out.latencyMs;
        return out;
      },
      close: () => base.close(),
    };
    let delivered = 0;
    let failed = 0;
    const why = new Map<string, number>();
    const relay = (options.baseline?.createRelay ?? createRelay)({
      db: instrument(db, t), transport, concurrency, batchSize, pollIntervalMs: 200, completionWriters: options.completionWriters, httpConcurrency: options.httpConcurrency ?? connections,
      onCompleted: (completions) => {
        for (const c of completions) {
          if (c.decision.status === "delivered") delivered += 1;
          else {
            failed += 1;
            const reason = `${c.outcome.result} ${c.outcome.status ?? c.outcome.errorClass}`;
            why.set(reason, (why.get(reason) ?? 0) + 1);
          }
        }
      },
    });
    await options.around?.start(); // e.g. a CPU profiler, for the relay phase only
    const rx = await receiverWindow(options.receiver);
    const dbCpu = await databaseCpu(fresh.url);
    const cpu = process.cpuUsage();
    const start = performance.now();
    await relay.start();
    await waitFor(() => delivered >= events || failed > 0, 600_000);
    const seconds = (performance.now() - start) / 1000;
    const cpuMs = cpuMsSince(cpu);
    const dbCpuMs = await dbCpu.sinceMs();
    const receiver = await rx.end();
    await options.around?.stop();
    await relay.stop();
    await transport.close();
    if (failed > 0) throw new Error(`${failed} deliveries did not succeed (${[...why].map(([r, n]) => `${n} × ${r}`).join(", ")}): the benchmark is void`);
    const wall = seconds * 1000;
    const avg = (x: Timer) => (x.calls ? x.ms / x.calls : 0);
    return runResult({ events, enqueueSeconds, seconds, cpuMs, dbCpuMs, process: "relay process", receiver, expectedPosts: options.noHttp ? 0 : events }, [
      `concurrency ${concurrency}, batch ${batchSize}: claims: ${t.claim.calls} queries, avg ${avg(t.claim).toFixed(1)} ms, ${((t.claim.ms / wall) * 100).toFixed(0)}% of wall time (summed: up to 2 run at once)`,
      `completion writes: ${t.complete.calls} transactions, avg ${avg(t.complete).toFixed(1)} ms (${(events / Math.max(1, t.complete.calls)).toFixed(0)} per batch), ${options.completionWriters ?? 2} at once: summed time ${((t.complete.ms / wall) * 100).toFixed(0)}% of wall time`,
      `HTTP: avg ${avg(t.http).toFixed(2)} ms per attempt (pool queueing included), ${connections} connections`,
    ]);
  } finally {
    await db.close();
    await fresh.drop();
  }
}
