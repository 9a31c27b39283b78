/**
 * Logs and traces in one Log Analytics workspace (retention from config) through Application
 * Insights, and an alert when a message lands in the dead-letter subqueue, sent by e-mail to
 * `alertEmail` through an action group when one is configured (without it the alert fires in the
 * portal only).
 */
import { Construct } from "constructs";
import { ApplicationInsights } from "@cdktf/provider-azurerm/lib/application-insights/index.js";
import { LogAnalyticsWorkspace } from "@cdktf/provider-azurerm/lib/log-analytics-workspace/index.js";
import { MonitorActionGroup } from "@cdktf/provider-azurerm/lib/monitor-action-group/index.js";
import { MonitorMetricAlert } from "@cdktf/provider-azurerm/lib/monitor-metric-alert/index.js";
import type { StackConfig } from "../config.js";
import type { AzureScope } from "./privateNetwork.js";

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
    this.connectionString = insights.connectionString;
  }
}
