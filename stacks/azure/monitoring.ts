/**
 * Logs and traces in one Log Analytics workspace (retention from config) through Application
 * Insights, and an alert when a message lands in the dead-letter subqueue, sent by e-mail to
 * `alertEmail` through an action group when one is configured (without it the alert fires in the
 * portal only).
 *
 * With `telemetry` (default), the functions send their spans and metrics to that Application
 * Insights (functions/azure/telemetry.ts): the metrics land in `customMetrics` under their pinned
 * names, their attributes in `customDimensions`. A workbook charts them (stacks/telemetry.ts says
 * which), and two log alerts on them go to the same action group: queue lag over
 * `queueLagAlarmSeconds`, and any dead letter.
 */
import { Construct } from "constructs";
import { ApplicationInsights } from "@cdktf/provider-azurerm/lib/application-insights/index.js";
import { LogAnalyticsWorkspace } from "@cdktf/provider-azurerm/lib/log-analytics-workspace/index.js";
import { MonitorActionGroup } from "@cdktf/provider-azurerm/lib/monitor-action-group/index.js";
import { MonitorMetricAlert } from "@cdktf/provider-azurerm/lib/monitor-metric-alert/index.js";
import { ApplicationInsightsWorkbook } from "@cdktf/provider-azurerm/lib/application-insights-workbook/index.js";
import { MonitorScheduledQueryRulesAlertV2 } from "@cdktf/provider-azurerm/lib/monitor-scheduled-query-rules-alert-v2/index.js";
import { createHash } from "node:crypto";
import { checkPanels, DASHBOARD_PANELS, metricName, TELEMETRY_ALARMS, type DashboardPanel, type PanelStat } from "../telemetry.js";
import type { StackConfig } from "../config.js";
import type { AzureScope } from "./privateNetwork.js";

const SUMMARIZE: Record<PanelStat, string> = { sum: "sum(valueSum)", max: "max(valueMax)", p95: "percentile(valueMax, 95)" };

/** The KQL of one panel over `customMetrics` (where the Azure Monitor exporter puts OpenTelemetry metrics). */
export function panelQuery(panel: DashboardPanel): string {
  const by = panel.by ? `tostring(customDimensions["${panel.by}"])` : undefined;
  return [
    "customMetrics",
    `| where name == "${metricName(panel.metric)}"`,
    ...(by && panel.values ? [`| where ${by} in (${panel.values.map((v) => `"${v}"`).join(", ")})`] : []),
    `| summarize value = ${SUMMARIZE[panel.stat]} by bin(timestamp, 5m)${by ? `, ${panel.by} = ${by}` : ""}`,
    "| render timechart",
  ].join("\n");
}

/** The workbook's content: one KQL time chart per panel. */
export function workbookJson(insightsId: string): string {
  checkPanels();
  return JSON.stringify({
    version: "Notebook/1.0",
    items: DASHBOARD_PANELS.map((panel) => ({
      type: 3,
      content: { version: "KqlItem/1.0", query: panelQuery(panel), size: 0, title: panel.title, timeContext: { durationMs: 86_400_000 }, queryType: 0, resourceType: "microsoft.insights/components", visualization: "timechart" },
      customWidth: "50",
    })),
    fallbackResourceIds: [insightsId],
  });
}

/** A workbook's name is a UUID: one derived from the prefix, so a redeploy keeps the same workbook. */
function workbookName(prefix: string): string {
  const h = createHash("sha1").update(`multicloud-webhooks/${prefix}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((Number.parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}

export class Monitoring extends Construct {
  readonly connectionString: string;

  constructor(scope: Construct, id: string, props: AzureScope & { config: StackConfig; namespaceId: string; queueName: string }) {
    super(scope, id);
    const where = { resourceGroupName: props.resourceGroupName, location: props.location, tags: props.tags };
    const workspace = new LogAnalyticsWorkspace(this, "logs", {
      ...where,
      name: `${props.prefix}-logs`,
      sku: "PerGB2018",
      // Log Analytics keeps at least 30 days.
      retentionInDays: Math.max(30, props.config.logRetentionDays),
    });
    const insights = new ApplicationInsights(this, "insights", {
      ...where,
      name: `${props.prefix}-insights`,
      applicationType: "Node.JS",
      workspaceId: workspace.id,
      localAuthenticationDisabled: false,
    });
    const email = props.config.alertEmail;
    const operators = email
      ? new MonitorActionGroup(this, "operators", {
        name: `${props.prefix}-operators`,
        resourceGroupName: props.resourceGroupName,
        // At most 12 characters: the sender name of the e-mail.
        shortName: props.prefix.slice(0, 12),
        emailReceiver: [{ name: "operator", emailAddress: email, useCommonAlertSchema: true }],
        tags: props.tags,
      })
      : undefined;
    new MonitorMetricAlert(this, "dead-letters", {
      name: `${props.prefix}-inbound-dead-letters`,
      resourceGroupName: props.resourceGroupName,
      scopes: [props.namespaceId],
      description: "Inbound webhooks reached the dead-letter subqueue; the reason is in each message's webhooksDeadLetterReason property (docs/deploy-azure.md). Inspect and resubmit them.",
      severity: 2,
      frequency: "PT5M",
      windowSize: "PT5M",
      criteria: [
        {
          metricNamespace: "Microsoft.ServiceBus/namespaces",
          metricName: "DeadletteredMessages",
          aggregation: "Maximum",
          operator: "GreaterThan",
          threshold: 0,
          dimension: [{ name: "EntityName", operator: "Include", values: [props.queueName] }],
        },
      ],
      action: operators ? [{ actionGroupId: operators.id }] : undefined,
      tags: props.tags,
    });
    if (props.config.telemetry) {
      new ApplicationInsightsWorkbook(this, "dashboard", {
        name: workbookName(props.prefix),
        displayName: `${props.prefix} webhooks`,
        resourceGroupName: props.resourceGroupName,
        location: props.location,
        sourceId: insights.id.toLowerCase(),
        category: "workbook",
        dataJson: workbookJson(insights.id),
        tags: props.tags,
      });
      const lag = TELEMETRY_ALARMS.queueLag;
      const dead = TELEMETRY_ALARMS.deadLetters;
      const logAlert = (id: string, name: string, description: string, query: string, threshold: number, aggregation: string) =>
        new MonitorScheduledQueryRulesAlertV2(this, id, {
          name: `${props.prefix}-${name}`,
          resourceGroupName: props.resourceGroupName,
          location: props.location,
          scopes: [insights.id],
          description,
          severity: 2,
          evaluationFrequency: "PT5M",
          windowDuration: "PT5M",
          criteria: [{ query, timeAggregationMethod: aggregation, metricMeasureColumn: "value", operator: "GreaterThan", threshold }],
          action: operators ? { actionGroups: [operators.id] } : undefined,
          tags: props.tags,
        });
      logAlert("queue-lag", "delivery-queue-lag",
        `The oldest due delivery has waited over ${props.config.queueLagAlarmSeconds} s: the relay is behind, stopped or failing (docs/operations.md).`,
        `customMetrics\n| where name == "${metricName(lag.metric)}"\n| summarize value = max(valueMax)`, props.config.queueLagAlarmSeconds, "Maximum");
      logAlert("telemetry-dead-letters", "dead-letters",
        "Deliveries were dead-lettered or inbox entries quarantined: inspect and replay them (webhooks dead-letters list).",
        `customMetrics\n| where name == "${metricName(dead.metric)}"\n| where tostring(customDimensions["${dead.by}"]) in (${dead.values.map((v) => `"${v}"`).join(", ")})\n| summarize value = sum(valueSum)`, 0, "Total");
    }
    this.connectionString = insights.connectionString;
  }
}
