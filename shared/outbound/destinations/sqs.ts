/**
 * SQS destinations: the envelope as MessageBody, the Standard Webhooks headers as String message
 * attributes; one SendMessage for a lone attempt, one SendMessageBatch for the attempts that reach
 * the client together (coalesce.ts; at most 10 entries, 256 KiB), each entry's refusal (`Failed[]`)
 * that entry's own failure. A FIFO queue (`.fifo`) gets the delivery id as MessageDeduplicationId
 * (SQS drops a repeat within its 5-minute window) and, as MessageGroupId, an ordered
 * subscription's ordering key (its events in order per key) or else the delivery id (no ordering
 * asked: no head-of-line blocking in the queue); a batch keeps its entries' order, and never holds
 * two messages of one key. Both calls need only `sqs:SendMessage`. The only module that loads
 * @aws-sdk/client-sqs for destinations, on the first SQS destination.
 */
import type { OpenDestination } from "./config.js";
import { AWS_BATCH, awsBatchSize, awsClientConfig, entryFailures, fifoIds, stringAttributes } from "./aws.js";
import { classifyAwsError } from "./classify.js";
import type { DestinationClient, DestinationMessage, SendFailure } from "./message.js";

export async function openSqs(destination: OpenDestination & { kind: "sqs" }): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  const sdk = await import("@aws-sdk/client-sqs");
  const client = new sdk.SQSClient(awsClientConfig(destination));
  const entry = (message: DestinationMessage) => ({
    MessageBody: message.body,
    MessageAttributes: stringAttributes(message.attributes),
    ...fifoIds(destination.fifo, message),
  });
  return {
    async send(message, signal) {
      await client.send(new sdk.SendMessageCommand({ QueueUrl: destination.queueUrl, ...entry(message) }), { abortSignal: signal });
    },
    async sendBatch(messages, signal) {
      const answer = await client.send(new sdk.SendMessageBatchCommand({
        QueueUrl: destination.queueUrl,
        Entries: messages.map((m, i) => ({ Id: String(i), ...entry(m) })),
      }), { abortSignal: signal });
      return entryFailures(messages.length, answer.Successful, answer.Failed, "SendMessageBatch");
    },
    batch: { ...AWS_BATCH, sizeOf: awsBatchSize },
    classify: classifyAwsError,
    async close() {
      client.destroy();
    },
  };
}
