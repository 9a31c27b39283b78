/**
 * What the Azure functions add to the OpenTelemetry SDK (functions/telemetry.ts): the exporter
 * name `azure_monitor` (OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER), which sends spans and
 * metrics to Application Insights with Microsoft's OpenTelemetry exporter
 * (`@azure/monitor-opentelemetry-exporter`, the one the Azure Monitor distro uses), authenticated by
 * the connection string the Functions host already has (APPLICATIONINSIGHTS_CONNECTION_STRING):
 * no collector, no agent. Spans become requests and dependencies (one operation per trace), the
 * metrics `customMetrics` under their pinned names. Loaded only when configured.
 */
import { FUNCTION_EXTRAS, type CloudTelemetry } from "../telemetry.js";

export const AZURE_TELEMETRY: CloudTelemetry = {
  extras: { ...FUNCTION_EXTRAS, traces: ["azure_monitor"], metrics: ["azure_monitor"] },
  host: async (env) => (await import("./telemetryExporters.js")).azureTelemetryHost(env),
};
