/**
 * Whether this process exports telemetry, read from the OpenTelemetry SDK's standard environment
 * variables (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/).
 * Nothing set: `undefined`, and the SDK is never loaded (shared/telemetry/sdk.ts), so a user who
 * sets none of them runs exactly the code they ran before.
 *
 * What turns a signal on: an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, or the signal's own
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `…_METRICS_ENDPOINT`), or naming its exporter
 * (`OTEL_TRACES_EXPORTER=otlp|console`, `OTEL_METRICS_EXPORTER=otlp|prometheus|console`).
 * `OTEL_SDK_DISABLED=true` or an exporter of `none` turns it off whatever else is set.
 * The rest (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER(_ARG)`,
 * `OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT`, …) the SDK packages read themselves.
 *
 * @example
 * const settings = telemetrySettings(process.env); // undefined unless configured
 */

export class TelemetryConfigError extends Error {
  override name = "TelemetryConfigError";
}

/** `otlp`, `console`, or a host's own exporter it offers (`TelemetryExtras`: a cloud function's `azure_monitor`, …). */
export type TraceExporterName = "otlp" | "console" | (string & {});
export type MetricExporterName = "otlp" | "prometheus" | "console" | (string & {});

/**
 * Exporter names a host offers beside the standard ones: each cloud's functions add their cloud's
 * own (functions/aws/telemetry.ts `awsemf`, functions/azure/telemetry.ts `azure_monitor`), and
 * leave out `prometheus`, which needs a server to scrape.
 */
export interface TelemetryExtras {
  traces?: readonly string[];
  metrics?: readonly string[];
  /** Standard names this host does not offer (a cloud function has no `GET /metrics`). */
  without?: readonly string[];
}
/** The OTLP encodings over HTTP. gRPC is not offered: it would bring @grpc/grpc-js for no gain here. */
export type OtlpProtocol = "http/protobuf" | "http/json";

export interface TelemetrySettings {
  /** Span exporters; empty: no tracer provider (spans stay no-ops). */
  traces: TraceExporterName[];
  /** Metric exporters; empty: no meter provider. `prometheus` serves `GET /metrics` on the platform's port. */
  metrics: MetricExporterName[];
  /** Per signal, from `OTEL_EXPORTER_OTLP_{TRACES,METRICS}_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`. Default: `http/protobuf` (the specification's). */
  tracesProtocol: OtlpProtocol;
  metricsProtocol: OtlpProtocol;
  /** `OTEL_METRIC_EXPORT_INTERVAL`: milliseconds between pushes of the periodic (OTLP, console) readers. Default: 60000. */
  metricIntervalMs: number;
}

type Env = Record<string, string | undefined>;

const TRACE_EXPORTERS: readonly string[] = ["otlp", "console", "none"];
const METRIC_EXPORTERS: readonly string[] = ["otlp", "prometheus", "console", "none"];
const PROTOCOLS: readonly string[] = ["http/protobuf", "http/json"];

function set(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/** A comma-separated exporter list, checked against `allowed`; `none` alone means none. */
function exporters<T extends string>(env: Env, name: string, allowed: readonly string[], endpointSet: boolean): T[] {
  const raw = set(env, name);
  if (raw === undefined) return endpointSet ? (["otlp"] as T[]) : [];
  const list = [...new Set(raw.split(",").map((s) => s.trim().toLowerCase()).filter(Boolean))];
  const unknown = list.filter((e) => !allowed.includes(e));
  if (unknown.length) {
    throw new TelemetryConfigError(`${name}=${raw}: ${unknown.join(", ")} is not an exporter here; use ${allowed.join(", ")} (comma-separated).`);
  }
  if (list.includes("none")) {
    if (list.length > 1) throw new TelemetryConfigError(`${name}=${raw}: none cannot be combined with another exporter.`);
    return [];
  }
  return list as T[];
}

function protocol(env: Env, signal: "TRACES" | "METRICS"): OtlpProtocol {
  const name = set(env, `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`) !== undefined ? `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL` : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const raw = set(env, name);
  if (raw === undefined) return "http/protobuf";
  if (!PROTOCOLS.includes(raw)) {
    throw new TelemetryConfigError(`${name}=${raw} is not supported; use http/protobuf or http/json (every OpenTelemetry Collector and the cloud OTLP endpoints take both).`);
  }
  return raw as OtlpProtocol;
}

/** The telemetry this environment asks for, or `undefined` when it asks for none (the default). */
export function telemetrySettings(env: Env, extras: TelemetryExtras = {}): TelemetrySettings | undefined {
  const disabled = set(env, "OTEL_SDK_DISABLED");
  if (disabled !== undefined && disabled.toLowerCase() === "true") return undefined;
  const endpoint = set(env, "OTEL_EXPORTER_OTLP_ENDPOINT") !== undefined;
  const offered = (standard: readonly string[], own: readonly string[] = []) => [...standard.filter((e) => !extras.without?.includes(e)), ...own];
  const traces = exporters<TraceExporterName>(env, "OTEL_TRACES_EXPORTER", offered(TRACE_EXPORTERS, extras.traces), endpoint || set(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") !== undefined);
  const metrics = exporters<MetricExporterName>(env, "OTEL_METRICS_EXPORTER", offered(METRIC_EXPORTERS, extras.metrics), endpoint || set(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") !== undefined);
  if (traces.length === 0 && metrics.length === 0) return undefined;
  const interval = set(env, "OTEL_METRIC_EXPORT_INTERVAL");
  const metricIntervalMs = interval === undefined ? 60_000 : Number(interval);
  if (!Number.isInteger(metricIntervalMs) || metricIntervalMs < 100 || metricIntervalMs > 86_400_000) {
    throw new TelemetryConfigError(`OTEL_METRIC_EXPORT_INTERVAL=${interval}: use a whole number of milliseconds from 100 to 86400000.`);
  }
  return { traces, metrics, tracesProtocol: protocol(env, "TRACES"), metricsProtocol: protocol(env, "METRICS"), metricIntervalMs };
}

/** One line for npm start's banner: where each signal goes. */
export function describeTelemetry(settings: TelemetrySettings): string {
  const metrics = settings.metrics.map((m) => (m === "prometheus" ? "prometheus (GET /metrics)" : m === "otlp" ? `otlp (${settings.metricsProtocol})` : m));
  const traces = settings.traces.map((t) => (t === "otlp" ? `otlp (${settings.tracesProtocol})` : t));
  return `traces → ${traces.join(", ") || "off"}; metrics → ${metrics.join(", ") || "off"}`;
}
