/**
 * Logs, the dashboard and alarms. Log groups are created here, before the functions, so their retention is
 * ours (a log group Lambda creates on first write keeps logs forever) and the function roles can
 * be scoped to exactly these groups. Tracing is X-Ray, switched on per function.
 *
 * With `telemetry` (default), the functions' metrics arrive as EMF log lines in the namespace
 * `<namePrefix>` (functions/aws/telemetryExporters.ts), under their pinned names: one CloudWatch
 * dashboard charts them (stacks/telemetry.ts says which), and two alarms on them notify the same
 * topic as the DLQ alarm: queue lag over `queueLagAlarmSeconds`, and any dead letter.
 */
import { Construct } from "constructs";
import { CloudwatchLogGroup } from "@cdktf/provider-aws/lib/cloudwatch-log-group/index.js";
import { CloudwatchDashboard } from "@cdktf/provider-aws/lib/cloudwatch-dashboard/index.js";
import { CloudwatchMetricAlarm } from "@cdktf/provider-aws/lib/cloudwatch-metric-alarm/index.js";
import { SnsTopic } from "@cdktf/provider-aws/lib/sns-topic/index.js";
import { SnsTopicSubscription } from "@cdktf/provider-aws/lib/sns-topic-subscription/index.js";
import type { StackConfig } from "../config.js";
import type { AwsFunctionName } from "./functionRoles.js";
import { METRIC_ATTRIBUTES } from "../../shared/telemetry/names.js";
import { checkPanels, DASHBOARD_PANELS, metricName, TELEMETRY_ALARMS, type PanelStat } from "../telemetry.js";

const STATISTIC: Record<PanelStat, string> = { sum: "Sum", max: "Maximum", p95: "p95" };

/** The CloudWatch dashboard's body: one metric widget per panel, two per row. */
export function awsDashboardBody(namespace: string, region: string): string {
  checkPanels();
  const widgets = DASHBOARD_PANELS.map((panel, i) => {
    const name = metricName(panel.metric);
    const stat = STATISTIC[panel.stat];
    // CloudWatch keys a metric by its whole dimension set: a metric is named with all of its attributes.
    const dims = METRIC_ATTRIBUTES[panel.metric];
    const exact = dims.length === 0 || (panel.values !== undefined && dims.length === 1 && dims[0] === panel.by);
    const metrics = !exact
      // Values not known in advance (subscription ids), or more attributes than the panel's: every series found.
      ? [[{ expression: `SEARCH('{${namespace},${dims.join(",")}} MetricName="${name}"', '${stat}', 60)`, id: "e1", label: "" }]]
      : !panel.by
        ? [[namespace, name, { label: name }]]
        : panel.values!.map((value) => [namespace, name, panel.by!, value, { label: value }]);
    return { type: "metric", x: (i % 2) * 12, y: Math.floor(i / 2) * 6, width: 12, height: 6, properties: { title: panel.title, region, view: "timeSeries", stat, period: 60, metrics } };
  });
  return JSON.stringify({ widgets });
}

export class Observability extends Construct {
  readonly functionLogGroups: Record<AwsFunctionName, CloudwatchLogGroup>;
  readonly apiAccessLogGroup: CloudwatchLogGroup;
  /** The DLQ alarm's topic; `alertEmail` is subscribed to it, add a pager the same way. */
  readonly alertTopicArn: string;
  /** Whether an e-mail subscription waits for its confirmation. */
  readonly alertEmail?: string;

  constructor(scope: Construct, id: string, props: { prefix: string; config: StackConfig; deadLetterQueueName: string; region: string }) {
    super(scope, id);
    const retentionInDays = props.config.logRetentionDays;
    const logGroup = (name: string, path: string) => new CloudwatchLogGroup(this, name, { name: path, retentionInDays });
    this.functionLogGroups = {
      ingest: logGroup("ingest-logs", `/aws/lambda/${props.prefix}-ingest`),
      processor: logGroup("processor-logs", `/aws/lambda/${props.prefix}-processor`),
      relay: logGroup("relay-logs", `/aws/lambda/${props.prefix}-relay`),
      migrate: logGroup("migrate-logs", `/aws/lambda/${props.prefix}-migrate`),
      management: logGroup("management-logs", `/aws/lambda/${props.prefix}-management`),
    };
    this.apiAccessLogGroup = logGroup("api-access-logs", `/aws/apigateway/${props.prefix}-ingress`);
    // Not encrypted with the aws/sns key: CloudWatch alarms cannot publish to a topic under that
    // key (its policy cannot grant CloudWatch). Alarm notifications carry no payload.
    const alerts = new SnsTopic(this, "alerts", { name: `${props.prefix}-alerts` });
    // A dead letter must be seen: any message in the DLQ raises the alarm.
    new CloudwatchMetricAlarm(this, "dlq-not-empty", {
      alarmName: `${props.prefix}-inbound-dead-letters`,
      alarmDescription: "Inbound webhooks reached the dead-letter queue; inspect and replay them.",
      namespace: "AWS/SQS",
      metricName: "ApproximateNumberOfMessagesVisible",
      dimensions: { QueueName: props.deadLetterQueueName },
      statistic: "Maximum",
      period: 300,
      evaluationPeriods: 1,
      threshold: 0,
      comparisonOperator: "GreaterThanThreshold",
      treatMissingData: "notBreaching",
      alarmActions: [alerts.arn],
    });
    if (props.config.telemetry) this.telemetryAlarms(props.prefix, props.region, props.config, alerts.arn);
    // SNS sends the address a confirmation link; until it is followed nothing is delivered
    // (the stack's `alert_email_confirmation` output says so).
    if (props.config.alertEmail) {
      new SnsTopicSubscription(this, "alert-email", { topicArn: alerts.arn, protocol: "email", endpoint: props.config.alertEmail });
    }
    this.alertTopicArn = alerts.arn;
    this.alertEmail = props.config.alertEmail;
  }

  /** The dashboard and the two alarms on the functions' own metrics (EMF, namespace = the prefix). */
  private telemetryAlarms(namespace: string, region: string, config: StackConfig, topicArn: string): void {
    new CloudwatchDashboard(this, "dashboard", { dashboardName: `${namespace}-webhooks`, dashboardBody: awsDashboardBody(namespace, region) });
    const lag = TELEMETRY_ALARMS.queueLag;
    new CloudwatchMetricAlarm(this, "queue-lag", {
      alarmName: `${namespace}-delivery-queue-lag`,
      alarmDescription: `The oldest due delivery has waited over ${config.queueLagAlarmSeconds} s: the relay is behind, stopped or failing (its logs; docs/operations.md).`,
      namespace,
      metricName: metricName(lag.metric),
      statistic: STATISTIC[lag.stat],
      period: 60,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      threshold: config.queueLagAlarmSeconds,
      comparisonOperator: "GreaterThanThreshold",
      // The relay reports it at each run; no data is no relay running, which the lag cannot say.
      treatMissingData: "missing",
      alarmActions: [topicArn],
      okActions: [topicArn],
    });
    const dead = TELEMETRY_ALARMS.deadLetters;
    new CloudwatchMetricAlarm(this, "dead-letters", {
      alarmName: `${namespace}-dead-letters`,
      alarmDescription: "Deliveries were dead-lettered or inbox entries quarantined: inspect and replay them (webhooks dead-letters list, webhooks inbox list --status quarantined).",
      metricQuery: [
        ...dead.values.map((kind, i) => ({
          id: `m${i}`,
          metric: { namespace, metricName: metricName(dead.metric), dimensions: { [dead.by]: kind }, stat: STATISTIC[dead.stat], period: 300 },
        })),
        { id: "total", expression: dead.values.map((_, i) => `FILL(m${i}, 0)`).join(" + "), label: "dead letters", returnData: true },
      ],
      evaluationPeriods: 1,
      threshold: 0,
      comparisonOperator: "GreaterThanThreshold",
      treatMissingData: "notBreaching",
      alarmActions: [topicArn],
    });
  }
}
