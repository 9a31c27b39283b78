/**
 * Logs and alarms. Log groups are created here, before the functions, so their retention is
 * ours (a log group Lambda creates on first write keeps logs forever) and the function roles can
 * be scoped to exactly these groups. Tracing is X-Ray, switched on per function.
 */
import { Construct } from "constructs";
import { CloudwatchLogGroup } from "@cdktf/provider-aws/lib/cloudwatch-log-group/index.js";
import { CloudwatchMetricAlarm } from "@cdktf/provider-aws/lib/cloudwatch-metric-alarm/index.js";
import { SnsTopic } from "@cdktf/provider-aws/lib/sns-topic/index.js";
import { SnsTopicSubscription } from "@cdktf/provider-aws/lib/sns-topic-subscription/index.js";
import type { StackConfig } from "../config.js";
import type { AwsFunctionName } from "./functionRoles.js";

export class Observability extends Construct {
  readonly functionLogGroups: Record<AwsFunctionName, CloudwatchLogGroup>;
  readonly apiAccessLogGroup: CloudwatchLogGroup;
  /** The DLQ alarm's topic; `alertEmail` is subscribed to it, add a pager the same way. */
  readonly alertTopicArn: string;
  /** Whether an e-mail subscription waits for its confirmation. */
  readonly alertEmail?: string;

  constructor(scope: Construct, id: string, props: { prefix: string; config: StackConfig; deadLetterQueueName: string }) {
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
    // SNS sends the address a confirmation link; until it is followed nothing is delivered
    // (the stack's `alert_email_confirmation` output says so).
    if (props.config.alertEmail) {
      new SnsTopicSubscription(this, "alert-email", { topicArn: alerts.arn, protocol: "email", endpoint: props.config.alertEmail });
    }
    this.alertTopicArn = alerts.arn;
    this.alertEmail = props.config.alertEmail;
  }
}
