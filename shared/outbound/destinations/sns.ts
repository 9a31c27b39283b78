/**
 * SNS destinations: one Publish per attempt, the envelope as Message, the Standard Webhooks
 * headers as String message attributes (a subscriber queue with raw message delivery gets them as
 * its own message attributes; without it, inside the JSON notification's MessageAttributes). A
 * FIFO topic gets MessageDeduplicationId and MessageGroupId as a FIFO queue does (sqs.ts). The
 * only module that loads @aws-sdk/client-sns, on the first SNS destination.
 */
import type { OpenDestination } from "./config.js";
import { awsClientConfig, stringAttributes } from "./aws.js";
import { classifyAwsError } from "./classify.js";
import { boundedId, type DestinationClient, type SendFailure } from "./message.js";

export async function openSns(destination: OpenDestination & { kind: "sns" }): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  const sdk = await import("@aws-sdk/client-sns");
  const client = new sdk.SNSClient(awsClientConfig(destination));
  return {
    async send(message, signal) {
      await client.send(new sdk.PublishCommand({
        TopicArn: destination.topicArn,
        Message: message.body,
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
