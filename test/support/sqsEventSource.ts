/**
 * A stand-in for Lambda's SQS event source mapping, so a handler can be driven against a real
 * SQS wire protocol (moto): receive a batch, hand it to the handler as a real `SQSEvent`, delete
 * what succeeded, leave what the partial batch response lists (SQS redelivers it after the
 * visibility timeout; the redrive policy dead-letters it after maxReceiveCount).
 */
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type Message, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";

export function toSqsRecord(message: Message, queueArn: string): SQSRecord {
  const a = message.Attributes ?? {};
  const messageAttributes: SQSRecord["messageAttributes"] = {};
  for (const [name, v] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = { stringValue: v.StringValue, dataType: v.DataType ?? "String", stringListValues: [], binaryListValues: [] };
  }
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? "",
    attributes: {
      ApproximateReceiveCount: a.ApproximateReceiveCount ?? "1",
      SentTimestamp: a.SentTimestamp ?? String(Date.now()),
      SenderId: a.SenderId ?? "AIDAEXAMPLE",
      ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes,
    md5OfBody: message.MD5OfBody ?? "",
    eventSource: "aws:sqs",
    eventSourceARN: queueArn,
    awsRegion: "us-east-1",
  };
}

/** One poll: returns how many records were handed over and which failed. */
export async function pollOnce(
  client: SQSClient,
  queueUrl: string,
  queueArn: string,
  handler: (event: SQSEvent) => Promise<SQSBatchResponse>,
): Promise<{ records: number; failed: string[] }> {
  const received = await client.send(new ReceiveMessageCommand({
    QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0,
    MessageSystemAttributeNames: ["All"], MessageAttributeNames: ["All"],
  }));
  const messages = received.Messages ?? [];
  if (messages.length === 0) return { records: 0, failed: [] };
  const response = await handler({ Records: messages.map((m) => toSqsRecord(m, queueArn)) });
  const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  const done = messages.filter((m) => !failed.has(m.MessageId!));
  if (done.length > 0) {
    await client.send(new DeleteMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
    }));
  }
  return { records: messages.length, failed: [...failed] };
}
