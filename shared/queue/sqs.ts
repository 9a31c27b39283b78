/**
 * The SQS adapter: the queue port on Amazon SQS (standard queue + redrive DLQ). The only module
 * that imports `@aws-sdk/client-sqs`, loaded on first use so the local platform never pays for it.
 *
 * Mapping: delivery count = ApproximateReceiveCount; visibility = VisibilityTimeout; retryAfter =
 * ChangeMessageVisibility (SQS allows up to 12 h); automatic dead-letter = the queue's redrive
 * policy (maxReceiveCount); explicit dead-letter = a copy sent to the DLQ with a `deadLetterReason`
 * attribute, then the original deleted (copy first: a crash in between duplicates, never loses).
 */
import type { Message, MessageAttributeValue, SQSClient, SQSClientConfig } from "@aws-sdk/client-sqs";
import type {
  DeadLetteredMessage, OutgoingMessage, QueueAdapter, QueueLimits, ReceiveOptions, ReceivedMessage, RetryOutcome,
} from "./port.js";
import { checkDelay, checkOutgoing, definedAttributes, InvalidReceiptError, MessageRejectedError, tooLong } from "./validate.js";

export interface SqsQueueOptions {
  /** URL of the main queue (it carries the redrive policy to the DLQ). */
  queueUrl: string;
  /** URL of its dead-letter queue. */
  deadLetterQueueUrl: string;
  /** Client settings (region, endpoint for moto, credentials). Default: the SDK's own chain. */
  clientConfig?: SQSClientConfig;
  /** Largest message accepted. Default: 262144 (256 KiB, what Lambda event source mappings were built around). */
  maxMessageBytes?: number;
}

/** Message attribute that carries the reason of an explicit dead-letter. */
export const REASON_ATTRIBUTE = "deadLetterReason";
/** What a DLQ message without our reason attribute was moved for. */
export const REDRIVE_REASON = "maxReceiveCount exceeded (SQS redrive policy)";

/** SQS: DelaySeconds on send is capped at 15 min; visibility (hence retryAfter) at 12 h. */
const MAX_SEND_DELAY = 900;
const MAX_VISIBILITY = 12 * 3600;
/** SQS carries at most 10 message attributes; two are kept for an explicit dead-letter (reason, original id). */
const MAX_ATTRIBUTES = 8;

/**
 * Opens the SQS queue pair. Loads the SDK now (dynamic import).
 * @example
 * const queue = await createSqsQueue({ queueUrl, deadLetterQueueUrl, clientConfig: { region: "eu-west-1" } });
 */
export async function createSqsQueue(options: SqsQueueOptions): Promise<QueueAdapter> {
  const sdk = await import("@aws-sdk/client-sqs");
  const client: SQSClient = new sdk.SQSClient(options.clientConfig ?? {});
  const { queueUrl, deadLetterQueueUrl } = options;
  const label = `SQS queue ${queueUrl}`;
  const limits: QueueLimits = {
    maxMessageBytes: options.maxMessageBytes ?? 256 * 1024,
    maxDelaySeconds: MAX_VISIBILITY,
    maxVisibilitySeconds: MAX_VISIBILITY,
  };

  function toSqsAttributes(message: OutgoingMessage, extra: Record<string, string> = {}): Record<string, MessageAttributeValue> {
    const attributes = { ...definedAttributes(message.attributes), ...extra };
    const out: Record<string, MessageAttributeValue> = {};
    for (const [name, value] of Object.entries(attributes)) out[name] = { DataType: "String", StringValue: value };
    return out;
  }

  function check(message: OutgoingMessage): void {
    checkOutgoing(message, limits, label);
    checkDelay(message.delaySeconds ?? 0, MAX_SEND_DELAY, label, "delaySeconds (SQS send delay)");
    if (Object.keys(definedAttributes(message.attributes)).length > MAX_ATTRIBUTES) {
      throw new MessageRejectedError(`${label}: at most ${MAX_ATTRIBUTES} attributes (SQS allows 10; two are kept for the dead-letter reason and original id)`);
    }
  }

  function fromSqs(m: Message): ReceivedMessage {
    const attributes: Record<string, string> = {};
    for (const [name, value] of Object.entries(m.MessageAttributes ?? {})) {
      if (value.StringValue !== undefined) attributes[name] = value.StringValue;
    }
    return {
      id: m.MessageId!,
      body: m.Body ?? "",
      attributes,
      deliveryCount: Number(m.Attributes?.ApproximateReceiveCount ?? 1),
      receipt: m.ReceiptHandle!,
    };
  }

  async function receiveFrom(url: string, receiveOptions: ReceiveOptions): Promise<ReceivedMessage[]> {
    const visibility = receiveOptions.visibilitySeconds ?? 30;
    checkDelay(visibility, MAX_VISIBILITY, label, "visibilitySeconds");
    const response = await client.send(new sdk.ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: Math.min(Math.max(receiveOptions.max ?? 10, 1), 10),
      VisibilityTimeout: visibility,
      WaitTimeSeconds: Math.min(receiveOptions.waitSeconds ?? 0, 20),
      MessageAttributeNames: ["All"],
      MessageSystemAttributeNames: ["ApproximateReceiveCount"],
    }));
    return (response.Messages ?? []).map(fromSqs);
  }

  function receiptOf(message: ReceivedMessage): string {
    if (!message?.receipt) throw new InvalidReceiptError(`${label}: the message has no receipt handle; settle it with the adapter that received it`);
    return message.receipt;
  }

  const remove = (url: string) => async (message: ReceivedMessage) => {
    await client.send(new sdk.DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: receiptOf(message) }));
  };

  async function sendBatch(messages: OutgoingMessage[]): Promise<{ ids: string[] }> {
    messages.forEach(check);
    const ids: string[] = [];
    // SQS takes 10 entries per call; entries are numbered so the answer maps back to the input order.
    for (let start = 0; start < messages.length; start += 10) {
      const chunk = messages.slice(start, start + 10);
      const response = await client.send(new sdk.SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((m, i) => ({
          Id: String(i), MessageBody: m.body, DelaySeconds: m.delaySeconds, MessageAttributes: toSqsAttributes(m),
        })),
      }));
      if (response.Failed?.length) {
        const f = response.Failed[0]!;
        const sent = (response.Successful ?? []).length;
        throw new MessageRejectedError(
          `${label}: ${response.Failed.length} of ${chunk.length} messages refused (${f.Code}: ${f.Message}); ` +
          `${ids.length + sent} were sent: retry only the refused ones`,
        );
      }
      const byId = new Map((response.Successful ?? []).map((s) => [s.Id, s.MessageId!]));
      chunk.forEach((_, i) => ids.push(byId.get(String(i))!));
    }
    return { ids };
  }

  return {
    name: "sqs",
    limits,
    async send(message) {
      check(message);
      const response = await client.send(new sdk.SendMessageCommand({
        QueueUrl: queueUrl, MessageBody: message.body, DelaySeconds: message.delaySeconds, MessageAttributes: toSqsAttributes(message),
      }));
      return { id: response.MessageId! };
    },
    sendBatch,
    receive: (receiveOptions = {}) => receiveFrom(queueUrl, receiveOptions),
    ack: remove(queueUrl),
    async retryAfter(message, delaySeconds): Promise<RetryOutcome> {
      if (delaySeconds > MAX_VISIBILITY) return tooLong(delaySeconds, MAX_VISIBILITY, "SQS (ChangeMessageVisibility)");
      checkDelay(delaySeconds, MAX_VISIBILITY, label, "retryAfter delay");
      await client.send(new sdk.ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: receiptOf(message), VisibilityTimeout: delaySeconds }));
      return { scheduled: true, delaySeconds };
    },
    async deadLetter(message, reason) {
      const receipt = receiptOf(message);
      const attributes = { ...message.attributes, originalMessageId: message.id };
      await client.send(new sdk.SendMessageCommand({
        QueueUrl: deadLetterQueueUrl,
        MessageBody: message.body,
        MessageAttributes: toSqsAttributes({ body: message.body, attributes }, { [REASON_ATTRIBUTE]: String(reason).slice(0, 1024) }),
      }));
      await client.send(new sdk.DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: receipt }));
    },
    async receiveDeadLetters(receiveOptions = {}): Promise<DeadLetteredMessage[]> {
      return (await receiveFrom(deadLetterQueueUrl, receiveOptions)).map((m) => {
        const { [REASON_ATTRIBUTE]: reason, ...attributes } = m.attributes;
        return { ...m, attributes, reason: reason ?? REDRIVE_REASON };
      });
    },
    ackDeadLetter: remove(deadLetterQueueUrl),
    async close() {
      client.destroy();
    },
  };
}
