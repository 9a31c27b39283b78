/** The GCP functions' exporters (./telemetry.ts). */
import { cjsInterop, type TelemetryHost } from "../../shared/telemetry/sdk.js";
import type { OtlpProtocol } from "../../shared/telemetry/settings.js";

type Env = Record<string, string | undefined>;

/** Whether `url` is Google's Telemetry (OTLP) API, which wants a Google token. */
export function isGoogleTelemetryApi(url: string | undefined): boolean {
  if (!url) return false;
  try {
    return new URL(url).hostname === "telemetry.googleapis.com";
  } catch {
    return false;
  }
}

/** How long a failure to get a token is remembered: the exports in between fail at once instead of asking again. */
export const TOKEN_FAILURE_BACKOFF_MS = 300_000;
/** The longest one token request may take before the export fails (the metadata server answers in milliseconds). */
export const TOKEN_TIMEOUT_MS = 1_500;

/**
 * The headers each export to the Telemetry API carries: a fresh (or cached) token of the
 * function's service account. Where there is none (outside Google Cloud without credentials), the
 * export fails quickly and the next ones fail at once for TOKEN_FAILURE_BACKOFF_MS, so an
 * invocation's flush never waits on a credential lookup that cannot succeed.
 */
export function googleHeaders(project: string | undefined, now: () => number = Date.now): () => Promise<Record<string, string>> {
  let auth: Promise<{ getRequestHeaders(): Promise<Headers | Record<string, string>> }> | undefined;
  let failed: { at: number; error: Error } | undefined;
  return async () => {
    if (failed && now() - failed.at < TOKEN_FAILURE_BACKOFF_MS) throw failed.error;
    auth ??= import("google-auth-library").then(cjsInterop).then(({ GoogleAuth }) => new GoogleAuth({ scopes: ["https://www.googleapis.com/auth/cloud-platform"] }));
    let headers: Headers | Record<string, string>;
    try {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no Google token within ${TOKEN_TIMEOUT_MS} ms`)), TOKEN_TIMEOUT_MS).unref(); });
      headers = await Promise.race([(await auth).getRequestHeaders(), timeout]).finally(() => clearTimeout(timer));
      failed = undefined;
    } catch (error) {
      failed = { at: now(), error: new Error(`the Telemetry API needs a Google token of the function's service account: ${(error as Error).message}`) };
      throw failed.error;
    }
    const out: Record<string, string> = {};
    if (typeof (headers as Headers).forEach === "function") (headers as Headers).forEach((value, key) => { out[key] = value; });
    else Object.assign(out, headers);
    if (project) out["x-goog-user-project"] = project;
    return out;
  };
}

export async function gcpTelemetryHost(env: Env): Promise<TelemetryHost> {
  const { randomUUID } = await import("node:crypto");
  const project = env.GOOGLE_CLOUD_PROJECT?.trim() || undefined;
  const headers = googleHeaders(project);
  const exporterOf = async (kind: "trace" | "metrics", protocol: OtlpProtocol, url: string) => {
    if (kind === "trace") {
      const { OTLPTraceExporter } = protocol === "http/json" ? cjsInterop(await import("@opentelemetry/exporter-trace-otlp-http")) : cjsInterop(await import("@opentelemetry/exporter-trace-otlp-proto"));
      return new OTLPTraceExporter({ url, headers });
    }
    const { OTLPMetricExporter } = protocol === "http/json" ? cjsInterop(await import("@opentelemetry/exporter-metrics-otlp-http")) : cjsInterop(await import("@opentelemetry/exporter-metrics-otlp-proto"));
    return new OTLPMetricExporter({ url, headers });
  };
  return {
    resource: {
      "cloud.provider": "gcp",
      "cloud.platform": "gcp_cloud_run",
      ...(project ? { "gcp.project_id": project } : {}),
      ...(env.K_SERVICE ? { "faas.name": env.K_SERVICE } : {}),
      "service.instance.id": randomUUID(),
    },
    async spanExporter(name, settings, url) {
      return name === "otlp" && isGoogleTelemetryApi(url) ? (await exporterOf("trace", settings.tracesProtocol, url!)) as never : undefined;
    },
    async metricExporter(name, settings, url) {
      return name === "otlp" && isGoogleTelemetryApi(url) ? (await exporterOf("metrics", settings.metricsProtocol, url!)) as never : undefined;
    },
  };
}
