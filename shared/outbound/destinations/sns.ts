/**
 * SNS destinations: the envelope as Message, the Standard Webhooks headers as String message
 * attributes (a subscriber queue with raw message delivery gets them as its own message
 * attributes; without it, inside the JSON notification's MessageAttributes); one Publish for a
 * lone attempt, one PublishBatch for the attempts that reach the client together (coalesce.ts; at
 * most 10 entries, 256 KiB), each entry's refusal (`Failed[]`) that entry's own failure. A FIFO
 * topic gets MessageDeduplicationId and MessageGroupId as a FIFO queue does (sqs.ts). Both calls
 * need only `sns:Publish`. The only module that loads @aws-sdk/client-sns, on the first SNS
 * destination.
 */
import type { OpenDestination } from "./config.js";
import { AWS_BATCH, awsBatchSize, awsClientConfig, entryFailures, fifoIds, stringAttributes } from "./aws.js";
import { classifyAwsError } from "./classify.js";
import type { DestinationClient, DestinationMessage, SendFailure } from "./message.js";

export async function openSns(destination: OpenDestination & { kind: "sns" }): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  const sdk = await import("@aws-sdk/client-sns");
  const client = new sdk.SNSClient(awsClientConfig(destination));
  const entry = (message: DestinationMessage) => ({
    Message: message.body,
    MessageAttributes: stringAttributes(message.attributes),
    ...fifoIds(destination.fifo, message),
  });
  return {
    async send(message, signal) {
      await client.send(new sdk.PublishCommand({ TopicArn: destination.topicArn, ...entry(message) }), { abortSignal: signal });
    },
    async sendBatch(messages, signal) {
      const answer = await client.send(new sdk.PublishBatchCommand({
        TopicArn: destination.topicArn,
        PublishBatchRequestEntries: messages.map((m, i) => ({ Id: String(i), ...entry(m) })),
      }), { abortSignal: signal });
      return entryFailures(messages.length, answer.Successful, answer.Failed, "PublishBatch");
    },
    batch: { ...AWS_BATCH, sizeOf: awsBatchSize },
    classify: classifyAwsError,
    async close() {
      client.destroy();
    },
  };
}
