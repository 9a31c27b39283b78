/**
 * Log retention for the project's default log bucket (functions, gateway, Cloud SQL logs) and
 * an alert when dead-lettered messages wait in the dead-letter subscription, mailed to
 * `alertEmail` through a notification channel when one is configured. Traces go to Cloud
 * Trace (the runtime accounts hold `cloudtrace.agent`).
 *
 * With `telemetry` (default), the functions send their spans and metrics by OTLP to the Telemetry
 * API (functions/gcp/telemetry.ts), which keeps the metrics' names as they are (Prometheus
 * time series of the `prometheus_target` resource, queried in PromQL with UTF-8 names:
 * `{"webhooks.delivery.attempts"}`). A dashboard charts them (stacks/telemetry.ts says which)
 * and two alert policies on them notify the same channel: queue lag over
 * `queueLagAlarmSeconds`, and any dead letter.
 */
import { Construct } from "constructs";
import { LoggingProjectBucketConfig } from "@cdktf/provider-google/lib/logging-project-bucket-config/index.js";
import { MonitoringAlertPolicy } from "@cdktf/provider-google/lib/monitoring-alert-policy/index.js";
import { MonitoringNotificationChannel } from "@cdktf/provider-google/lib/monitoring-notification-channel/index.js";
import { MonitoringDashboard } from "@cdktf/provider-google/lib/monitoring-dashboard/index.js";
import type { StackConfig } from "../config.js";
import { checkPanels, DASHBOARD_PANELS, metricName, TELEMETRY_ALARMS, type DashboardPanel } from "../telemetry.js";

/** A PromQL selector of one of our metrics (dotted names need the UTF-8 form) and its attribute filter. */
function selector(metric: string, label?: string, values?: readonly string[]): string {
  const filter = label && values ? `, "${label}"=~"${values.join("|")}"` : "";
  return `{"${metric}"${filter}}`;
}

/** The PromQL of one panel: a rate for counters, the largest value for gauges, the 95th percentile for the histogram. */
export function panelPromql(panel: DashboardPanel): string {
  const name = metricName(panel.metric);
  const by = panel.by ? ` by ("${panel.by}")` : "";
  if (panel.stat === "p95") return `histogram_quantile(0.95, sum by ("le"${panel.by ? `, "${panel.by}"` : ""}) (rate(${selector(`${name}_bucket`, panel.by, panel.values)}[5m])))`;
  if (panel.stat === "sum") return `sum${by} (increase(${selector(name, panel.by, panel.values)}[5m]))`;
  return `max${by} (${selector(name, panel.by, panel.values)})`;
}

/** The dashboard's JSON: one chart per panel, two per row. */
export function gcpDashboardJson(prefix: string): string {
  checkPanels();
  return JSON.stringify({
    displayName: `${prefix} webhooks`,
    mosaicLayout: {
      columns: 12,
      tiles: DASHBOARD_PANELS.map((panel, i) => ({
        xPos: (i % 2) * 6, yPos: Math.floor(i / 2) * 4, width: 6, height: 4,
        widget: { title: panel.title, xyChart: { dataSets: [{ plotType: "LINE", timeSeriesQuery: { prometheusQuery: panelPromql(panel) } }] } },
      })),
    },
  });
}

export class Monitoring extends Construct {
  constructor(scope: Construct, id: string, props: { prefix: string; project: string; config: StackConfig; deadLetterSubscription: string }) {
    super(scope, id);
    new LoggingProjectBucketConfig(this, "log-retention", {
      project: props.project,
      location: "global",
      bucketId: "_Default",
      retentionDays: props.config.logRetentionDays,
    });
    // Without an address the policy still opens incidents in the console; with one, they are mailed.
    const email = props.config.alertEmail
      ? new MonitoringNotificationChannel(this, "email", {
          displayName: `${props.prefix} dead-letter alerts`,
          type: "email",
          labels: { email_address: props.config.alertEmail },
        })
      : undefined;
    if (props.config.telemetry) this.telemetryAlerts(props.prefix, props.project, props.config, email?.id);
    new MonitoringAlertPolicy(this, "dead-letters", {
      displayName: `${props.prefix} inbound dead letters`,
      notificationChannels: email ? [email.id] : undefined,
      combiner: "OR",
      documentation: { content: "Inbound webhooks reached the dead-letter topic; inspect and replay them.", mimeType: "text/markdown" },
      conditions: [
        {
          displayName: "dead-letter subscription not empty",
          conditionThreshold: {
            filter: `resource.type = "pubsub_subscription" AND resource.labels.subscription_id = "${props.deadLetterSubscription}" AND metric.type = "pubsub.googleapis.com/subscription/num_undelivered_messages"`,
            comparison: "COMPARISON_GT",
            thresholdValue: 0,
            duration: "0s",
            aggregations: [{ alignmentPeriod: "300s", perSeriesAligner: "ALIGN_MAX" }],
          },
        },
      ],
    });
  }

  /** The dashboard and the two alert policies on the functions' own metrics (the Telemetry API's). */
  private telemetryAlerts(prefix: string, project: string, config: StackConfig, channel: string | undefined): void {
    new MonitoringDashboard(this, "dashboard", { project, dashboardJson: gcpDashboardJson(prefix) });
    const lag = TELEMETRY_ALARMS.queueLag;
    const dead = TELEMETRY_ALARMS.deadLetters;
    const policy = (id: string, displayName: string, content: string, query: string, duration: string) =>
      new MonitoringAlertPolicy(this, id, {
        project,
        displayName: `${prefix} ${displayName}`,
        notificationChannels: channel ? [channel] : undefined,
        combiner: "OR",
        documentation: { content, mimeType: "text/markdown" },
        conditions: [{ displayName, conditionPrometheusQueryLanguage: { query, duration, evaluationInterval: "60s" } }],
      });
    policy("queue-lag", "delivery queue lag", `The oldest due delivery has waited over ${config.queueLagAlarmSeconds} s: the relay is behind, stopped or failing (docs/operations.md).`,
      `max(${selector(metricName(lag.metric))}) > ${config.queueLagAlarmSeconds}`, "120s");
    policy("telemetry-dead-letters", "dead letters", "Deliveries were dead-lettered or inbox entries quarantined: inspect and replay them (webhooks dead-letters list).",
      `sum(increase(${selector(metricName(dead.metric), dead.by, dead.values)}[5m])) > 0`, "0s");
  }
}
