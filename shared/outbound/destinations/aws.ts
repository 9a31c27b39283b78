/**
 * Settings shared by the AWS destinations (sqs.ts, sns.ts, eventbridge.ts): the client's region,
 * endpoint and credentials, the batch calls' limits, and reading a batch answer's entries. No SDK
 * is imported here.
 */
import type { OpenDestination } from "./config.js";
import { classifyAwsError } from "./classify.js";
import { boundedId, type DestinationMessage, type SendFailure } from "./message.js";

/** Client settings for one AWS destination: its own key when given, else the relay's role (the SDK's default chain). */
export function awsClientConfig(destination: OpenDestination & { region: string; endpoint: string | null }): Record<string, unknown> {
  const credentials = destination.credentials && "accessKeyId" in destination.credentials
    ? {
      accessKeyId: destination.credentials.accessKeyId,
      secretAccessKey: destination.secrets.secretAccessKey!,
      ...(destination.secrets.sessionToken ? { sessionToken: destination.secrets.sessionToken } : {}),
    }
    : undefined;
  return {
    region: destination.region,
    ...(destination.endpoint ? { endpoint: destination.endpoint } : {}),
    ...(credentials ? { credentials } : {}),
    // The relay retries with its own backoff, breaker and attempt log: one SDK attempt per delivery
    // attempt, so a throttled send is recorded and spaced out rather than retried blind inside it.
    maxAttempts: 1,
  };
}

/** SQS and SNS message attributes: every value a String attribute. */
export function stringAttributes(attributes: Record<string, string>): Record<string, { DataType: "String"; StringValue: string }> {
  const out: Record<string, { DataType: "String"; StringValue: string }> = {};
  for (const [name, value] of Object.entries(attributes)) out[name] = { DataType: "String", StringValue: value };
  return out;
}

/**
 * A FIFO queue's or topic's ids for one message (sqs.ts explains them): the delivery id for
 * de-duplication, the ordering key (else the delivery id: no head-of-line blocking) as the group.
 * Nothing for a standard queue or topic.
 */
export function fifoIds(fifo: boolean, message: DestinationMessage): { MessageDeduplicationId?: string; MessageGroupId?: string } {
  return fifo ? { MessageDeduplicationId: boundedId(message.webhookId), MessageGroupId: boundedId(message.orderingKey ?? message.webhookId) } : {};
}

/** SendMessageBatch, PublishBatch and PutEvents: at most 10 entries and 256 KiB per call. */
export const AWS_BATCH = { maxMessages: 10, maxBytes: 256 * 1024 } as const;

/** A message's share of an SQS or SNS batch's 256 KiB: its body and its attributes' names, types and values. */
export function awsBatchSize(message: DestinationMessage): number {
  let size = Buffer.byteLength(message.body);
  for (const name in message.attributes) size += Buffer.byteLength(name) + Buffer.byteLength(message.attributes[name]!) + 6; // "String"
  return size;
}

/**
 * Each entry's outcome from an SQS or SNS batch answer (entry `Id`s are the messages' indexes):
 * null for a `Successful` one, a `Failed` one's code classified as that call's error would be
 * (the sender's fault: permanent unless throttled; the service's: retried). An entry the answer
 * does not mention is retried: the service may not have taken it.
 */
export function entryFailures(
  count: number,
  successful: readonly { Id?: string | undefined }[] | undefined,
  failed: readonly { Id?: string | undefined; Code?: string | undefined; Message?: string | undefined; SenderFault?: boolean | undefined }[] | undefined,
  call: string,
): (SendFailure | null)[] {
  const missing: SendFailure = { result: "retryable", errorClass: "destination_error", detail: `${call} answered without this entry: sent again` };
  const out: (SendFailure | null)[] = Array.from({ length: count }, () => missing);
  for (const s of successful ?? []) out[Number(s.Id)] = null;
  for (const f of failed ?? []) {
    out[Number(f.Id)] = classifyAwsError({ name: f.Code ?? "InternalError", message: f.Message ?? `${call} refused the entry`, $fault: f.SenderFault ? "client" : "server" });
  }
  return out.slice(0, count);
}
