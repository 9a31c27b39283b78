/**
 * The functions' telemetry as the three stacks configure it (config `telemetry`, default on):
 * the standard OTEL_* variables each function gets (functions/telemetry.ts reads them), and what
 * the dashboards and alarms chart, named by the pinned metric names (shared/telemetry/names.ts),
 * so a renamed metric changes the dashboards with it and test/stacks/telemetryDashboards.test.ts
 * checks they still name what the functions emit.
 *
 * Where each cloud's signals go, with no collector to run (docs/operations.md, "In the clouds"):
 * - AWS: spans by OTLP to X-Ray's endpoint (SigV4-signed by the function's role), metrics as
 *   CloudWatch EMF log lines in the namespace `<namePrefix>` (the resource's `service.namespace`);
 * - Azure: both to Application Insights (its OpenTelemetry exporter, the connection string the
 *   Functions host already has): spans as requests and dependencies, metrics in `customMetrics`;
 * - GCP: both by OTLP to the Telemetry API (telemetry.googleapis.com, a Google token of the
 *   function's service account): spans in Cloud Trace, metrics in Cloud Monitoring under their names.
 */
import { METRIC_ATTRIBUTES, METRICS, type MetricKey } from "../shared/telemetry/names.js";
import type { StackConfig } from "./config.js";

export type Cloud = "aws" | "azure" | "gcp";

/** The OTEL_* variables of one function; none when `telemetry` is off (then no SDK is loaded). */
export function telemetryEnvironment(config: StackConfig, cloud: Cloud, functionName: string, region: string): Record<string, string> {
  if (!config.telemetry) return {};
  const common: Record<string, string> = {
    OTEL_SERVICE_NAME: functionName,
    OTEL_RESOURCE_ATTRIBUTES: `service.namespace=${config.namePrefix},cloud.region=${region}`,
    // A minute between metric pushes (Azure, GCP); AWS writes its EMF lines at every invocation.
    OTEL_METRIC_EXPORT_INTERVAL: "60000",
    ...(config.traceSampleRatio < 1 ? { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: String(config.traceSampleRatio) } : {}),
  };
  if (cloud === "aws") {
    return { ...common, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `https://xray.${region}.amazonaws.com/v1/traces`, OTEL_METRICS_EXPORTER: "awsemf" };
  }
  if (cloud === "azure") return { ...common, OTEL_TRACES_EXPORTER: "azure_monitor", OTEL_METRICS_EXPORTER: "azure_monitor" };
  return { ...common, OTEL_EXPORTER_OTLP_ENDPOINT: "https://telemetry.googleapis.com" };
}

/** How a panel reduces its metric over a period. */
export type PanelStat = "sum" | "max" | "p95";

export interface DashboardPanel {
  title: string;
  metric: MetricKey;
  stat: PanelStat;
  /** One series per value of this attribute (one of the metric's pinned attributes); absent: one series. */
  by?: string;
  /** The attribute's values to chart, when they are a fixed set; absent: every value found (in flight: per endpoint). */
  values?: readonly string[];
}

/** Issue 33 item 4's metrics, one panel each (the same on every cloud). */
export const DASHBOARD_PANELS: readonly DashboardPanel[] = [
  { title: "Delivery outcomes (attempts)", metric: "deliveryAttempts", stat: "sum", by: "outcome", values: ["success", "retry", "failed"] },
  { title: "Attempt latency, p95 (ms)", metric: "deliveryLatency", stat: "p95", by: "outcome", values: ["success", "retry", "failed"] },
  { title: "Queue lag: oldest due delivery (s)", metric: "deliveryQueueLag", stat: "max" },
  { title: "Dead letters", metric: "deadLetters", stat: "sum", by: "kind", values: ["outbound", "inbound"] },
  { title: "Subscriptions by breaker state", metric: "endpointBreaker", stat: "max", by: "state", values: ["closed", "degraded", "open", "disabled"] },
  { title: "In flight per endpoint", metric: "deliveryInFlight", stat: "max", by: "endpoint" },
  { title: "Inbox backlog", metric: "inboxBacklog", stat: "max", by: "status", values: ["pending", "deferred", "failed"] },
  { title: "Processor results (failed: retried on the inbox's schedule)", metric: "inboxProcessed", stat: "sum", by: "outcome", values: ["applied", "noop", "deferred", "quarantined", "failed"] },
  { title: "Inbound requests", metric: "inboxReceived", stat: "sum", by: "outcome", values: ["accepted", "rejected"] },
];

/** The two alarms every stack raises on the functions' metrics. */
export const TELEMETRY_ALARMS = {
  /** The oldest due delivery has waited longer than `queueLagAlarmSeconds`. */
  queueLag: { metric: "deliveryQueueLag" as MetricKey, stat: "max" as const },
  /** Any dead letter, outbound or inbound, in the period. */
  deadLetters: { metric: "deadLetters" as MetricKey, stat: "sum" as const, by: "kind", values: ["outbound", "inbound"] as const },
};

/** A panel's metric name as the functions emit it. */
export const metricName = (key: MetricKey): string => METRICS[key];

/** Refuses a panel whose attribute the metric does not carry: such a chart would stay empty. */
export function checkPanels(panels: readonly DashboardPanel[] = DASHBOARD_PANELS): void {
  for (const p of panels) {
    if (p.by && !METRIC_ATTRIBUTES[p.metric].includes(p.by)) {
      throw new Error(`Dashboard panel "${p.title}": ${METRICS[p.metric]} has no attribute ${p.by} (it has ${METRIC_ATTRIBUTES[p.metric].join(", ") || "none"}).`);
    }
  }
}
