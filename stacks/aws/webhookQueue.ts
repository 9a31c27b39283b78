/**
 * The inbound queue and its dead-letter queue. After `maxDeliveryAttempts` receives without a
 * delete, SQS moves a message to the DLQ; the processor's own retry schedule (1, 5, 15 min)
 * runs before that by re-sending with a delay, so the redrive is the backstop for crashes.
 */
import { Construct } from "constructs";
import { SqsQueue } from "@cdktf/provider-aws/lib/sqs-queue/index.js";
import { SqsQueueRedriveAllowPolicy } from "@cdktf/provider-aws/lib/sqs-queue-redrive-allow-policy/index.js";
import type { StackConfig } from "../config.js";

const DAY = 86_400;

export class WebhookQueue extends Construct {
  readonly queue: SqsQueue;
  readonly deadLetterQueue: SqsQueue;

  constructor(scope: Construct, id: string, props: { prefix: string; config: StackConfig }) {
    super(scope, id);
    const { config } = props;
    this.deadLetterQueue = new SqsQueue(this, "dlq", {
      name: `${props.prefix}-inbound-dlq`,
      messageRetentionSeconds: config.deadLetterRetentionDays * DAY,
      sqsManagedSseEnabled: true,
    });
    this.queue = new SqsQueue(this, "queue", {
      name: `${props.prefix}-inbound`,
      messageRetentionSeconds: config.queueRetentionDays * DAY,
      // AWS guidance for Lambda consumers: visibility timeout at least six times the function
      // timeout, so a message is not redelivered while a throttled batch is still retried.
      visibilityTimeoutSeconds: 6 * config.processorTimeoutSeconds,
      maxMessageSize: 262_144,
      receiveWaitTimeSeconds: 20,
      sqsManagedSseEnabled: true,
      // A plain JSON string (tokens resolve inside it), so the synthesized JSON stays checkable.
      redrivePolicy: JSON.stringify({
        deadLetterTargetArn: this.deadLetterQueue.arn,
        maxReceiveCount: config.maxDeliveryAttempts,
      }),
    });
    // Only our queue may use the DLQ as its dead-letter target.
    new SqsQueueRedriveAllowPolicy(this, "dlq-allow", {
      queueUrl: this.deadLetterQueue.url,
      redriveAllowPolicy: JSON.stringify({ redrivePermission: "byQueue", sourceQueueArns: [this.queue.arn] }),
    });
  }
}
