/**
 * One side of `BENCH_ONLY=telemetry` (bench/outbound/telemetrySide.ts), in a process of its own:
 * starts the OpenTelemetry SDK from the environment the parent gave it (or, on the "off" side,
 * checks that nothing would start it), warms up, runs `runOurs` once with the transport
 * instrumented as the platform's worker has it, and sends the result to the parent over IPC.
 * The receiver's CPU readings are asked of the parent, which owns the receiver process.
 */
import { startTelemetryFromEnv } from "../../shared/telemetry/sdk.js";
import { runOurs } from "./ours.js";
import type { ReceiverStats } from "./support.js";

type FromParent = { rx: { count: number; cpuMs: number } };

const side = process.env.BENCH_TELEMETRY_SIDE;
const url = process.env.BENCH_RECEIVER_URL!;
const events = Number(process.env.BENCH_EVENTS ?? 10_000);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);

const send = (m: unknown) => new Promise<void>((resolve) => process.send!(m, () => resolve()));

/** The parent's receiver, read through IPC (one request at a time: receiverWindow reads twice, in turn). */
const receiver: ReceiverStats = () => new Promise((resolve) => {
  process.once("message", (m: FromParent) => resolve(m.rx));
  process.send!({ rx: true });
});

try {
  const telemetry = await startTelemetryFromEnv(process.env);
  if ((side === "on") !== (telemetry !== undefined)) throw new Error(`side ${side}, but the SDK ${telemetry ? "started" : "did not start"}: the environment does not match the side`);
  // Warm-up on a tenth of the work (JIT, PostgreSQL caches), discarded, in this process as each side runs in its own.
  await runOurs(url, Math.ceil(events / 10), connections, 1024, 500, { instrumented: true });
  const result = await runOurs(url, events, connections, 1024, 500, { instrumented: true, receiver });
  // Spans still in the batch processor's buffer at the window's end (under one batch of 512 and
  // 5 s) are sent here, outside the measured CPU; the parent counts them as received all the same.
  await telemetry?.shutdown();
  await send({ result });
  process.exit(0);
} catch (error) {
  await send({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
}
