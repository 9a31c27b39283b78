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

/** The headers each export to the Telemetry API carries: a fresh (or cached) token of the function's service account. */
export function googleHeaders(project: string | undefined): () => Promise<Record<string, string>> {
  let auth: Promise<{ getRequestHeaders(): Promise<Headers | Record<string, string>> }> | undefined;
  return async () => {
    auth ??= import("google-auth-library").then(cjsInterop).then(({ GoogleAuth }) => new GoogleAuth({ scopes: ["https://www.googleapis.com/auth/cloud-platform"] }));
    const headers = await (await auth).getRequestHeaders();
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
