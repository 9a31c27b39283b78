/**
 * The SQS Lambda trigger, translated: an `SQSEvent` batch becomes `ReceivedMessage`s for the core,
 * and the core's per-message failures become a partial batch response (`batchItemFailures`), so SQS
 * retries only the failed records (the event source mapping needs `ReportBatchItemFailures`).
 *
 * The batch flow is Powertools for AWS Lambda's `BatchProcessor` (loaded on first use): it already
 * does the bookkeeping (each record's outcome, the response shape); only the translation is ours.
 */
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { MalformedMessageError, type ReceivedMessage } from "../port.js";

/** Handles one message; throwing (or rejecting) marks this record failed, to be retried by SQS. */
export type MessageHandler = (message: ReceivedMessage) => Promise<void>;

/** Translates one SQS record. Throws MalformedMessageError when it lacks what every record has. */
export function fromSqsRecord(record: SQSRecord): ReceivedMessage {
  if (!record || typeof record !== "object") throw new MalformedMessageError("SQS record is not an object");
  if (typeof record.messageId !== "string" || record.messageId === "") throw new MalformedMessageError("SQS record has no messageId");
  if (typeof record.body !== "string") throw new MalformedMessageError(`SQS record ${record.messageId} has no string body`);
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(record.messageAttributes ?? {})) {
    // Lambda delivers String and Number attributes as stringValue; Binary ones are not ours and are left out.
    if (typeof value?.stringValue === "string") attributes[name] = value.stringValue;
  }
  const count = Number(record.attributes?.ApproximateReceiveCount);
  return {
    id: record.messageId,
    body: record.body,
    attributes,
    deliveryCount: Number.isInteger(count) && count > 0 ? count : 1,
    receipt: record.receiptHandle ?? "",
  };
}

export interface SqsBatchOptions {
  /** Handle the records concurrently. Default: true (Powertools' default); false for one at a time. */
  parallel?: boolean;
}

/**
 * Runs `handler` on each record of `event` and answers with the records that failed. A record that
 * cannot be translated fails too (never dropped): SQS retries it and the redrive policy moves it
 * to the DLQ after maxReceiveCount. A batch where every record failed is answered, not thrown.
 * @example
 * export const handler = (event: SQSEvent) => handleSqsEvent(event, (m) => inbox.process(m));
 */
export async function handleSqsEvent(event: SQSEvent, handler: MessageHandler, options: SqsBatchOptions = {}): Promise<SQSBatchResponse> {
  if (!event || !Array.isArray(event.Records)) throw new MalformedMessageError("not an SQS event: `Records` array missing");
  const { BatchProcessor, EventType, processPartialResponse } = await import("@aws-lambda-powertools/batch");
  const processor = new BatchProcessor(EventType.SQS);
  return processPartialResponse(event, (record: SQSRecord) => handler(fromSqsRecord(record)), processor, {
    throwOnFullBatchFailure: false,
    processInParallel: options.parallel ?? true,
  });
}
