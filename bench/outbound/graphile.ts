/**
 * The same workload on graphile-worker 0.17: one job per event, whose task POSTs the event to the
 * receiver with the same transport (signing, keep-alive pool) our relay uses, so the comparison is
 * between the queue machinery, not the HTTP clients. Tuned as its performance page advises
 * (https://worker.graphile.org/docs/performance): local queue (batch fetch), batched completion
 * (`completeJobBatchDelay: 0`), `useNodeTime`, a pool sized for the concurrency.
 */
import { EventEmitter } from "node:events";
import { performance } from "node:perf_hooks";
import { Logger, makeWorkerUtils, run, type Task } from "graphile-worker";
import pg from "pg";
import { generateSecret } from "../../shared/outbound/signature.js";
import { createTransport } from "../../shared/outbound/transport.js";
import { cpuMsSince, databaseCpu, eventData, freshDatabase, receiverWindow, type ReceiverStats, runResult, type RunResult, waitFor } from "./support.js";

const quiet = new Logger(() => () => {});

export async function runGraphile(receiverUrl: string, events: number, concurrency: number, localQueueSize: number, options: { noHttp?: boolean; receiver?: ReceiverStats } = {}): Promise<RunResult> {
  const fresh = await freshDatabase("bench_graphile");
  const transport = createTransport({ allowedDestinations: ["127.0.0.1"], connectionsPerOrigin: concurrency });
  const secrets = [generateSecret()];
  try {
    const utils = await makeWorkerUtils({ connectionString: fresh.url, logger: quiet });
    await utils.migrate();
    const enqStart = performance.now();
    const perCall = 500;
    for (let i = 0; i < events; i += perCall) {
      const specs = [];
      for (let j = i; j < Math.min(events, i + perCall); j++) {
        const body = JSON.stringify({ id: `evt_${j}`, type: "bench.created", timestamp: new Date().toISOString(), data: eventData(j) });
        specs.push({ identifier: "deliver", payload: { webhookId: `evt_${j}:sub_1`, body } });
      }
      await utils.addJobs(specs);
    }
    const enqueueSeconds = (performance.now() - enqStart) / 1000;
    await utils.release();

    const deliver: Task = async (payload) => {
      const { webhookId, body } = payload as { webhookId: string; body: string };
      if (options.noHttp) return; // diagnostic: the queue's own cost
      const out = await transport.deliver({ url: `${receiverUrl}/graphile`, webhookId, timestamp: Math.floor(Date.now() / 1000), body, secrets });
      if (out.result !== "delivered") throw new Error(`delivery failed: ${out.errorClass}`);
    };
    let succeeded = 0;
    let failed = 0;
    const emitter = new EventEmitter();
    emitter.on("job:success", () => { succeeded += 1; });
    emitter.on("job:error", () => { failed += 1; });

    // The pool graphile-worker would make itself (connection string, max size), made here so its
    // end can be awaited before the database is dropped: stop() ends the pool it made without
    // waiting and removes its error handler, so a connection still closing when DROP DATABASE …
    // WITH (FORCE) terminated it raised an unhandled 'error' and killed the benchmark.
    const pgPool = new pg.Pool({ connectionString: fresh.url, max: Math.min(concurrency + 2, 30) });
    pgPool.on("error", () => {});
    pgPool.on("connect", (client) => client.on("error", () => {}));
    const rx = await receiverWindow(options.receiver);
    const dbCpu = await databaseCpu(fresh.url);
    const cpu = process.cpuUsage();
    const start = performance.now();
    const runner = await run({
      taskList: { deliver },
      noHandleSignals: true,
      logger: quiet,
      events: emitter as never,
      pgPool,
      preset: {
        worker: {
          concurrentJobs: concurrency,
          pollInterval: 200,
          useNodeTime: true,
          localQueue: { size: localQueueSize },
          completeJobBatchDelay: 0,
          failJobBatchDelay: 0,
        },
      },
    });
    await waitFor(() => succeeded >= events || failed > 0, 600_000);
    // Success events fire before batched completions are written: stop the clock when the table is empty.
    const check = new pg.Client({ connectionString: fresh.url });
    await check.connect();
    await waitFor(async () => (await check.query("SELECT count(*)::int AS n FROM graphile_worker._private_jobs")).rows[0].n === 0, 60_000, 2);
    const seconds = (performance.now() - start) / 1000;
    const cpuMs = cpuMsSince(cpu);
    const dbCpuMs = await dbCpu.sinceMs();
    const receiver = await rx.end();
    await check.end();
    await runner.stop();
    await pgPool.end();
    if (failed > 0) throw new Error(`${failed} graphile-worker jobs failed: the benchmark is void`);
    return runResult({ events, enqueueSeconds, seconds, cpuMs, dbCpuMs, process: "process", receiver, expectedPosts: options.noHttp ? 0 : events }, [
      `concurrentJobs ${concurrency}, localQueue.size ${localQueueSize}, completeJobBatchDelay 0, useNodeTime, pool ${Math.min(concurrency + 2, 30)}`,
    ]);
  } finally {
    await transport.close();
    await fresh.drop();
  }
}
