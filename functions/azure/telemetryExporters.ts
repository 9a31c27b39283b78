/**
 * The Azure functions' exporters (./telemetry.ts). Offline storage is off: an instance may be
 * recycled at any time, and what failed to send would wait on a disk nobody reads again; a failed
 * export is retried by the next one instead.
 */
import { cjsInterop, type TelemetryHost } from "../../shared/telemetry/sdk.js";

type Env = Record<string, string | undefined>;

export async function azureTelemetryHost(env: Env): Promise<TelemetryHost> {
  const { randomUUID } = await import("node:crypto");
  const connectionString = env.APPLICATIONINSIGHTS_CONNECTION_STRING?.trim();
  const options = () => {
    if (!connectionString) throw new Error("azure_monitor needs APPLICATIONINSIGHTS_CONNECTION_STRING (the stack sets it from its Application Insights).");
    return { connectionString, disableOfflineStorage: true };
  };
  return {
    resource: {
      "cloud.provider": "azure",
      "cloud.platform": "azure_functions",
      ...(env.WEBSITE_SITE_NAME ? { "faas.name": env.WEBSITE_SITE_NAME } : {}),
      ...(env.REGION_NAME ? { "cloud.region": env.REGION_NAME } : {}),
      "service.instance.id": env.WEBSITE_INSTANCE_ID || randomUUID(),
    },
    async spanExporter(name) {
      if (name !== "azure_monitor") return undefined;
      const { AzureMonitorTraceExporter } = cjsInterop(await import("@azure/monitor-opentelemetry-exporter"));
      return new AzureMonitorTraceExporter(options());
    },
    async metricExporter(name) {
      if (name !== "azure_monitor") return undefined;
      const { AzureMonitorMetricExporter } = cjsInterop(await import("@azure/monitor-opentelemetry-exporter"));
      return new AzureMonitorMetricExporter(options());
    },
  };
}
