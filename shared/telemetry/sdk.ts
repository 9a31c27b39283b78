/**
 * The OpenTelemetry SDK, installed in this process only when the environment asks for it
 * (./settings.ts). Every SDK package is loaded here by a dynamic `import()`, inside
 * `startTelemetry`: a process that sets no OTEL_* variable never loads one, and the platform's
 * calls stay the API's no-ops (what `npm start` did before).
 *
 * Traces: a NodeTracerProvider (AsyncLocalStorage context, W3C trace context propagation) with a
 * batch span processor per exporter. Metrics: a MeterProvider with a periodic reader per pushing
 * exporter (OTLP, console) and, for `prometheus`, a pull reader whose text `GET /metrics` serves
 * on the platform's own port (shared/server/routes/metrics.ts) instead of a second server.
 * Resource: `service.name` `multicloud-webhooks` and `service.version`, under what
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say.
 *
 * @example
 * const telemetry = await startTelemetryFromEnv(process.env); // undefined: nothing configured
 * // … run the platform …
 * await telemetry?.shutdown(); // flushes what is buffered
 */
import { context, diag, metrics, propagation, trace } from "@opentelemetry/api";
import type { PushMetricExporter } from "@opentelemetry/sdk-metrics";
import type { SpanExporter } from "@opentelemetry/sdk-trace-node";
import { VERSION } from "../version.js";
import { telemetrySettings, type OtlpProtocol, type TelemetrySettings } from "./settings.js";

export interface Telemetry {
  readonly settings: TelemetrySettings;
  /** Every metric now in the Prometheus text format (0.0.4); present when `prometheus` is a metric exporter. */
  readonly prometheus?: () => Promise<string>;
  /** Sends what is buffered now (spans waiting for their batch, the metrics of the current interval). */
  flush(): Promise<void>;
  /** Sends the spans waiting for their batch, not the metrics (a cloud function's end of invocation). */
  flushSpans(): Promise<void>;
  /** Flushes buffered spans and metrics, stops the readers and uninstalls the global providers. */
  shutdown(): Promise<void>;
}

/** Default `service.name` when OTEL_SERVICE_NAME sets none. */
export const DEFAULT_SERVICE_NAME = "multicloud-webhooks";

type Env = Record<string, string | undefined>;

/**
 * A dynamically imported package's exports. Node gives a CommonJS package's names on the
 * namespace; a bundle (esbuild, functions/build.ts) gives a CommonJS chunk's exports as `default`
 * only (sdk-trace-node, exporter-prometheus, google-auth-library ship no ES module build).
 */
export function cjsInterop<T extends object>(mod: T): T {
  const keys = Object.keys(mod);
  const fallback = (mod as { default?: unknown }).default;
  return keys.length === 1 && keys[0] === "default" && typeof fallback === "object" && fallback !== null ? (fallback as T) : mod;
}

/**
 * What a host adds to the standard SDK (the cloud functions, functions/telemetry.ts): exporters of
 * its own (an exporter name `TelemetryExtras` offered, or one taking over `otlp` for its cloud's
 * endpoint, such as SigV4 signing for X-Ray) and resource attributes. Each returns undefined to
 * leave the name to the standard exporters. Loaded with the SDK, never before.
 */
export interface TelemetryHost {
  spanExporter?(name: string, settings: TelemetrySettings, url: string | undefined): Promise<SpanExporter | undefined>;
  metricExporter?(name: string, settings: TelemetrySettings, url: string | undefined): Promise<PushMetricExporter | undefined>;
  /** Under what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say (the environment wins). */
  resource?: Record<string, string>;
}

/**
 * An OTLP/HTTP URL for `signal`: the signal's own variable as it is, else the base endpoint with
 * `/v1/<signal>` appended (the specification's rule). Undefined: the exporter's default (localhost:4318).
 */
export function otlpUrl(env: Env, signal: "traces" | "metrics"): string | undefined {
  const own = env[`OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_ENDPOINT`]?.trim();
  if (own) return own;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, "")}/v1/${signal}` : undefined;
}

/**
 * OTEL_RESOURCE_ATTRIBUTES (`key=value,…`, values percent-encoded) and OTEL_SERVICE_NAME, which
 * wins over a `service.name` there, as the specification says. A malformed pair is skipped, as
 * the SDK's own detector does.
 */
export function resourceAttributesFromEnv(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (env.OTEL_RESOURCE_ATTRIBUTES ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    try {
      out[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      // a bad percent-encoding: skipped
    }
  }
  const name = env.OTEL_SERVICE_NAME?.trim();
  if (name) out["service.name"] = name;
  return out;
}

async function resourceFor(env: Env, host: Record<string, string> = {}) {
  const { defaultResource, resourceFromAttributes } = cjsInterop(await import("@opentelemetry/resources"));
  // Later merges win: what the environment says over the host's and our defaults.
  return defaultResource()
    .merge(resourceFromAttributes({ "service.name": DEFAULT_SERVICE_NAME, "service.version": VERSION, ...host }))
    .merge(resourceFromAttributes(resourceAttributesFromEnv(env)));
}

async function traceExporter(protocol: OtlpProtocol, url: string | undefined) {
  const { OTLPTraceExporter } = protocol === "http/json"
    ? cjsInterop(await import("@opentelemetry/exporter-trace-otlp-http"))
    : cjsInterop(await import("@opentelemetry/exporter-trace-otlp-proto"));
  return new OTLPTraceExporter(url ? { url } : {});
}

async function metricExporter(protocol: OtlpProtocol, url: string | undefined) {
  const { OTLPMetricExporter } = protocol === "http/json"
    ? cjsInterop(await import("@opentelemetry/exporter-metrics-otlp-http"))
    : cjsInterop(await import("@opentelemetry/exporter-metrics-otlp-proto"));
  return new OTLPMetricExporter(url ? { url } : {});
}

/** Installs the SDK `settings` ask for as this process's global providers. */
export async function startTelemetry(settings: TelemetrySettings, env: Env = process.env, host: TelemetryHost = {}): Promise<Telemetry> {
  const resource = await resourceFor(env, host.resource);
  const stops: Array<() => Promise<void>> = [];
  const flushes: Array<() => Promise<void>> = [];
  let flushSpans = async () => {};

  if (settings.traces.length) {
    const { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider } = cjsInterop(await import("@opentelemetry/sdk-trace-node"));
    const url = otlpUrl(env, "traces");
    const spanProcessors = await Promise.all(settings.traces.map(async (name) =>
      new BatchSpanProcessor((await host.spanExporter?.(name, settings, url)) ??
        (name === "console" ? new ConsoleSpanExporter() : await traceExporter(settings.tracesProtocol, url)))));
    // The sampler is the SDK's reading of OTEL_TRACES_SAMPLER / _ARG (default: parent-based, always on).
    const provider = new NodeTracerProvider({ resource, spanProcessors });
    provider.register();
    flushSpans = () => provider.forceFlush();
    flushes.push(flushSpans);
    stops.push(async () => {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    });
  }

  let prometheus: (() => Promise<string>) | undefined;
  if (settings.metrics.length) {
    const { ConsoleMetricExporter, MeterProvider, PeriodicExportingMetricReader } = cjsInterop(await import("@opentelemetry/sdk-metrics"));
    const readers = [];
    for (const name of settings.metrics) {
      if (name === "prometheus") {
        const { PrometheusExporter, PrometheusSerializer } = cjsInterop(await import("@opentelemetry/exporter-prometheus"));
        // No server of its own: the platform's `GET /metrics` (operator access) asks it.
        const reader = new PrometheusExporter({ preventServerStart: true });
        const serializer = new PrometheusSerializer();
        prometheus = async () => {
          const { resourceMetrics, errors } = await reader.collect();
          if (errors.length) diag.warn("metrics collection errors", ...errors);
          return serializer.serialize(resourceMetrics);
        };
        readers.push(reader);
      } else {
        const url = otlpUrl(env, "metrics");
        const exporter = (await host.metricExporter?.(name, settings, url)) ??
          (name === "console" ? new ConsoleMetricExporter() : await metricExporter(settings.metricsProtocol, url));
        readers.push(new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: settings.metricIntervalMs, exportTimeoutMillis: Math.min(30_000, settings.metricIntervalMs) }));
      }
    }
    const provider = new MeterProvider({ resource, readers });
    metrics.setGlobalMeterProvider(provider);
    flushes.push(() => provider.forceFlush());
    stops.push(async () => {
      await provider.shutdown();
      metrics.disable();
    });
  }

  return {
    settings,
    prometheus,
    async flush() {
      await Promise.allSettled(flushes.map((flush) => flush()));
    },
    async flushSpans() {
      await flushSpans().catch(() => {});
    },
    async shutdown() {
      await Promise.allSettled(stops.splice(0).map((stop) => stop()));
    },
  };
}

/** `startTelemetry` for what `env` asks; `undefined`, with no SDK loaded, when it asks for nothing. */
export async function startTelemetryFromEnv(env: Env = process.env): Promise<Telemetry | undefined> {
  const settings = telemetrySettings(env);
  return settings ? startTelemetry(settings, env) : undefined;
}
