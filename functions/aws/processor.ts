/**
 * AWS processor: SQS event source mapping (ReportBatchItemFailures) → inbox → reconciler.
 * Native settlement: a record in `batchItemFailures` stays on the queue and comes back after its
 * visibility timeout; after maxReceiveCount the redrive policy moves it to the DLQ. A deferral
 * sets the record's visibility to the entry's next attempt (≤ 12 h) before failing it.
 */
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { processInbound, type Verdict } from "../../shared/cloud/processInbound.js";
import type { ReceivedMessage } from "../../shared/queue/port.js";
import { handleSqsEvent } from "../../shared/queue/triggers/sqs.js";
import { inboxProcessorFor } from "../../shared/cloud/inboxProcessor.js";
import { queueAndClaimChecks } from "./clients.js";
import { awsRuntime, type AwsRuntime } from "./runtime.js";

/** A record that must come back later: SQS redelivers what the batch response lists. */
class RetryLater extends Error {
  override name = "RetryLater";
}

export async function settleOnSqs(runtime: AwsRuntime, message: ReceivedMessage, verdict: Verdict): Promise<void> {
  const queue = await runtime.queue();
  switch (verdict.action) {
    case "ack":
      return; // the event source mapping deletes it
    case "deadLetter":
      runtime.logger.error({ messageId: message.id, reason: verdict.reason }, "message dead-lettered");
      await queue.deadLetter(message, verdict.reason);
      return;
    case "retry": {
      const outcome = await queue.retryAfter(message, verdict.delaySeconds);
      // Beyond SQS's 12 h the inbox keeps the schedule and the scheduled relay picks the entry up.
      if (!outcome.scheduled) return;
      throw new RetryLater(`${verdict.reason}; visible again in ${verdict.delaySeconds} s`);
    }
    case "fail":
      throw new RetryLater(verdict.reason);
  }
}

export async function handleProcessor(runtime: AwsRuntime, event: SQSEvent): Promise<SQSBatchResponse> {
  const db = await runtime.database();
  const processor = inboxProcessorFor(db, runtime.tuning, runtime.logger);
  const verifyWith = runtime.settings.WEBHOOKS_VERIFY_IN_PROCESSOR === "true"
    ? { partners: await runtime.partners(), maxBodyBytes: runtime.tuning.MAX_PAYLOAD_BYTES }
    : undefined;
  return handleSqsEvent(event, async (message) => {
    const verdict = await processInbound({ db, processor, objectStore: runtime.objectStore, verifyWith }, message);
    await settleOnSqs(runtime, message, verdict);
  });
}

export const handler = (event: SQSEvent): Promise<SQSBatchResponse> => handleProcessor(awsRuntime(queueAndClaimChecks), event);
