/**
 * `BENCH_ONLY=telemetry`: the relay's defaults with the OpenTelemetry SDK off beside on, each run
 * in a child process of its own (bench/outbound/telemetryChild.ts), started afresh per round.
 *
 * Why child processes, not one process switching the SDK on and off: the SDK is process-global.
 * Before it starts, `trace.getTracer` hands out a proxy whose spans are the API's non-recording
 * no-ops; once a provider is registered the same proxies record, and `context` runs on
 * AsyncLocalStorage. Switching it off again (`shutdown` disables the globals) does not give back
 * the process a user without OTEL_* variables runs: the SDK's modules stay loaded, its heap stays,
 * and V8 has already seen the recording paths at the call sites both sides share (withSpan,
 * the transport decorator), so the "off" side would run code shaped by the "on" one; running
 * "off" first every round instead would break the ABBA order. One fresh process per side per round
 * is what `npm start` is with and without the variables.
 *
 * The "on" side: OTLP/HTTP (protobuf, the default) to a local OtlpTestPeer in this (parent)
 * process, every span sampled (OTEL_TRACES_SAMPLER=always_on), metrics pushed every second
 * (OTEL_METRIC_EXPORT_INTERVAL=1000, so they are exported inside a run of a few seconds; the default
 * is 60 s). The child's process CPU includes building, batching, encoding and sending spans and
 * metrics; the peer's decoding is in this process, as a collector's would be elsewhere, and not in it.
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startOtlpTestPeer, type OtlpTestPeer } from "../../test/support/otlpTestPeer.js";
import { SPANS } from "../../shared/telemetry/names.js";
import type { ReceiverStats, RunResult } from "./support.js";

let peer: Promise<OtlpTestPeer> | undefined;
/** The one peer of the run, started when the "on" side first needs it; `closeTelemetryPeer` stops it. */
const thePeer = () => (peer ??= startOtlpTestPeer());

export async function closeTelemetryPeer(): Promise<void> {
  if (peer) await (await peer).close();
}

type FromChild = { rx?: true; result?: RunResult; error?: string };

/** One side's run in a fresh process: its result, with what the peer received appended to its notes. */
export async function runTelemetrySide(side: "off" | "on", receiverUrl: string, rx: ReceiverStats, events: number, connections: number): Promise<RunResult> {
  const env: Record<string, string | undefined> = { ...process.env, BENCH_TELEMETRY_SIDE: side, BENCH_RECEIVER_URL: receiverUrl, BENCH_EVENTS: String(events), BENCH_CONNECTIONS: String(connections) };
  // The "off" side gets no OTEL_* variable at all, whatever the shell running the bench has.
  for (const k of Object.keys(env)) if (k.startsWith("OTEL_")) delete env[k];
  const p = side === "on" ? await thePeer() : undefined;
  if (p) Object.assign(env, { OTEL_EXPORTER_OTLP_ENDPOINT: p.url, OTEL_TRACES_SAMPLER: "always_on", OTEL_METRIC_EXPORT_INTERVAL: "1000" });
  const spansBefore = p?.spans.length ?? 0;
  const metricsBefore = p?.metrics.length ?? 0;
  const child = fork(fileURLToPath(new URL("./telemetryChild.ts", import.meta.url)), [], { execArgv: ["--import", "tsx"], env, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const result = await new Promise<RunResult>((resolve, reject) => {
    let settled: RunResult | Error | undefined;
    child.on("message", (m: FromChild) => {
      if (m.rx) void rx().then((stats) => child.send({ rx: stats }));
      else if (m.result) settled = m.result;
      else if (m.error) settled = new Error(`the telemetry ${side} side failed: ${m.error}`);
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (settled instanceof Error) reject(settled);
      else if (settled && code === 0) resolve(settled);
      else reject(new Error(`the telemetry ${side} side exited with ${code} before its result`));
    });
  });
  if (p) {
    // The exporters' last requests were answered before the child exited (shutdown flushes).
    const spans = p.spans.slice(spansBefore);
    const attempts = spans.filter((s) => s.name === SPANS.deliveryAttempt).length;
    result.breakdown.push(`OTLP peer received ${spans.length} spans (${attempts} delivery attempts, for ${events} deliveries measured + ${Math.ceil(events / 10)} warm-up) and ${p.metrics.length - metricsBefore} metric series exports`);
  }
  return result;
}
