/**
 * Log retention for the project's default log bucket (functions, gateway, Cloud SQL logs) and
 * an alert when dead-lettered messages wait in the dead-letter subscription, mailed to
 * `alertEmail` through a notification channel when one is configured. Traces go to Cloud
 * Trace (the runtime accounts hold `cloudtrace.agent`).
 */
import { Construct } from "constructs";
import { LoggingProjectBucketConfig } from "@cdktf/provider-google/lib/logging-project-bucket-config/index.js";
import { MonitoringAlertPolicy } from "@cdktf/provider-google/lib/monitoring-alert-policy/index.js";
import { MonitoringNotificationChannel } from "@cdktf/provider-google/lib/monitoring-notification-channel/index.js";
import type { StackConfig } from "../config.js";

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
}
