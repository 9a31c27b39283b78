/**
 * Logs and traces in one Log Analytics workspace (retention from config) through Application
 * Insights, and an alert when a message lands in the dead-letter subqueue.
 */
import { Construct } from "constructs";
import { ApplicationInsights } from "@cdktf/provider-azurerm/lib/application-insights/index.js";
import { LogAnalyticsWorkspace } from "@cdktf/provider-azurerm/lib/log-analytics-workspace/index.js";
import { MonitorMetricAlert } from "@cdktf/provider-azurerm/lib/monitor-metric-alert/index.js";
import type { StackConfig } from "../config.js";
import type { AzureScope } from "./privateNetwork.js";

export class Monitoring extends Construct {
  readonly connectionString: string;

  constructor(scope: Construct, id: string, props: AzureScope & { config: StackConfig; namespaceId: string; queueName: string }) {
    super(scope, id);
    const where = { resourceGroupName: props.resourceGroupName, location: props.location };
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
    new MonitorMetricAlert(this, "dead-letters", {
      name: `${props.prefix}-inbound-dead-letters`,
      resourceGroupName: props.resourceGroupName,
      scopes: [props.namespaceId],
      description: "Inbound webhooks reached the dead-letter subqueue; inspect and replay them.",
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
    });
    this.connectionString = insights.connectionString;
  }
}
