/**
 * The OpenTelemetry SDK in a cloud function: started when, and only when, the standard OTEL_*
 * variables ask for it (shared/telemetry/settings.ts; each stack sets them, docs/operations.md),
 * at the first invocation of the instance, and flushed before each invocation returns.
 *
 * Nothing configured: the handler runs as it did, and no SDK module is loaded (shared/telemetry/sdk.ts
 * and the cloud's exporters are dynamic imports, so esbuild puts them in chunks a bundle loads only
 * then; test/functions/bundles.test.ts checks no bundle loads them at import).
 *
 * Why a flush per invocation: Lambda freezes the instance when the handler returns, and Azure's
 * and Cloud Run's instances may be throttled or stopped once the answer is sent, so spans waiting
 * for their batch would leave late or never. The spans are flushed at the end of every
 * invocation, waiting at most `FLUSH_WAIT_MS` (an unreachable backend must not hold webhooks up:
 * what was not sent by then goes with the next flush); the metrics at most once per
 * OTEL_METRIC_EXPORT_INTERVAL (a push per invocation would cost a request each; what an instance
 * counted after its last push is lost if it is stopped before the next), except where exporting
 * is writing a log line (AWS's EMF: every invocation).
 *
 * A value the settings refuse (an unknown exporter, gRPC), or an exporter that cannot be made
 * (Azure's without a connection string), is logged, once, and the function runs without
 * telemetry: a telemetry typo must not refuse webhooks.
 *
 * @example
 * export const handler = withTelemetry(AWS_TELEMETRY, (event) => handleIngest(awsRuntime(…), event));
 */
import type { Database } from "../shared/db/port.js";
import type { Telemetry, TelemetryHost } from "../shared/telemetry/sdk.js";
import { telemetrySettings, type TelemetryExtras } from "../shared/telemetry/settings.js";

/** What a cloud adds: its exporter names, and the module with its exporters (loaded only when configured). */
export interface CloudTelemetry {
  extras: TelemetryExtras;
  /** Metrics flushed at every invocation too, not once per interval: for an exporter that only writes a log line (AWS's EMF). */
  metricsEveryInvocation?: boolean;
  host(env: Record<string, string | undefined>): Promise<TelemetryHost>;
}

/** The longest an invocation waits for its spans to leave. */
export const FLUSH_WAIT_MS = 2_000;

/** Every cloud function: no `GET /metrics` to scrape. */
export const FUNCTION_EXTRAS: TelemetryExtras = { without: ["prometheus"] };

let started: Promise<FunctionTelemetry | undefined> | undefined;

export interface FunctionTelemetry {
  telemetry: Telemetry;
  /** Spans now (bounded by FLUSH_WAIT_MS); metrics when an export interval has passed since the last. */
  afterInvocation(): Promise<void>;
}

function wait(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** This instance's telemetry: started at the first call when configured, else undefined (and nothing loaded). */
export function functionTelemetry(cloud: CloudTelemetry, env: Record<string, string | undefined> = process.env): Promise<FunctionTelemetry | undefined> {
  started ??= (async () => {
    let settings;
    try {
      settings = telemetrySettings(env, cloud.extras);
    } catch (error) {
      console.error(JSON.stringify({ level: "error", msg: `telemetry is off: ${(error as Error).message}` }));
      return undefined;
    }
    if (!settings) return undefined;
    let telemetry: Telemetry;
    try {
      const [{ startTelemetry }, host] = await Promise.all([import("../shared/telemetry/sdk.js"), cloud.host(env)]);
      telemetry = await startTelemetry(settings, env, host);
    } catch (error) {
      // An exporter that cannot be made here (Azure without its connection string, …).
      console.error(JSON.stringify({ level: "error", msg: `telemetry is off: ${(error as Error).message}` }));
      return undefined;
    }
    let metricsSentAt = Date.now();
    return {
      telemetry,
      async afterInvocation() {
        const sends = [telemetry.flushSpans()];
        if (settings.metrics.length && (cloud.metricsEveryInvocation || Date.now() - metricsSentAt >= settings.metricIntervalMs)) {
          metricsSentAt = Date.now();
          sends.push(telemetry.flush());
        }
        await Promise.race([Promise.allSettled(sends), wait(FLUSH_WAIT_MS)]);
      },
    };
  })();
  return started;
}

/**
 * `handler` with the SDK started before its first invocation (when configured) and the
 * invocation's spans flushed before it returns.
 */
export function withTelemetry<A extends unknown[], R>(cloud: CloudTelemetry, handler: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    const telemetry = await functionTelemetry(cloud);
    if (!telemetry) return handler(...args);
    try {
      return await handler(...args);
    } finally {
      await telemetry.afterInvocation();
    }
  };
}

let gaugesOn = false;
/**
 * The relay's: the platform's gauges (queue lag, in flight, breakers, inbox backlog, queue depths)
 * read from `db` at each metric collection, once per instance, only when metrics are on. Their
 * queries then run once per export interval, not per delivery.
 */
export async function observeGauges(cloud: CloudTelemetry, db: Database): Promise<void> {
  const telemetry = await functionTelemetry(cloud);
  if (gaugesOn || !telemetry?.telemetry.settings.metrics.length) return;
  gaugesOn = true;
  const [{ observePlatformGauges }, { observePlatformQueues }] = await Promise.all([
    import("../shared/telemetry/platformGauges.js"),
    import("../shared/telemetry/queueDepth.js"),
  ]);
  observePlatformGauges(db);
  observePlatformQueues(db);
}
