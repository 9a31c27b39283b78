/**
 * SQS destinations: one SendMessage per attempt, the envelope as MessageBody, the Standard
 * Webhooks headers as String message attributes. A FIFO queue (`.fifo`) gets the delivery id as
 * MessageDeduplicationId (SQS drops a repeat within its 5-minute window) and, as MessageGroupId,
 * an ordered subscription's ordering key (its events in order per key) or else the delivery id
 * (no ordering asked: no head-of-line blocking in the queue). The only module that loads
 * @aws-sdk/client-sqs for destinations, on the first SQS destination.
 */
import type { OpenDestination } from "./config.js";
import { awsClientConfig, stringAttributes } from "./aws.js";
import { classifyAwsError } from "./classify.js";
import { boundedId, type DestinationClient, type SendFailure } from "./message.js";

export async function openSqs(destination: OpenDestination & { kind: "sqs" }): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  const sdk = await import("@aws-sdk/client-sqs");
  const client = new sdk.SQSClient(awsClientConfig(destination));
  return {
    async send(message, signal) {
      await client.send(new sdk.SendMessageCommand({
        QueueUrl: destination.queueUrl,
        MessageBody: message.body,
        MessageAttributes: stringAttributes(message.attributes),
        ...(destination.fifo ? { MessageDeduplicationId: boundedId(message.webhookId), MessageGroupId: boundedId(message.orderingKey ?? message.webhookId) } : {}),
      }), { abortSignal: signal });
    },
    classify: classifyAwsError,
    async close() {
      client.destroy();
    },
  };
}
