/**
 * AWS processor: SQS event source mapping (ReportBatchItemFailures) → inbox → reconciler.
 * Native settlement: a record in `batchItemFailures` stays on the queue and comes back after its
 * visibility timeout; after maxReceiveCount the redrive policy moves it to the DLQ. That count is
 * for failures only: a deferral (the event came before its prerequisite) must not use it up, so a
 * deferred message is re-sent as a new message with `DelaySeconds` (at most SQS's 15 minutes) and
 * the original acked; a new message starts at receive count 1. Copy first, then ack: a crash in
 * between leaves two copies, which the inbox de-duplicates.
 *
 * Where SQS cannot hold the wait (beyond 15 minutes), and in direct-ingress mode (a copy would be
 * verified again, and its signature timestamp would be older than the partner's tolerance by
 * then), the message is acked and the inbox keeps the schedule: the entry stays `deferred` with
 * its next attempt time, and the scheduled relay runs it when due (at most one relay interval late).
 */
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { processInbound, type Verdict } from "../../shared/cloud/processInbound.js";
import type { ReceivedMessage } from "../../shared/queue/port.js";
import { handleSqsEvent } from "../../shared/queue/triggers/sqs.js";
import { inboxProcessorFor } from "../../shared/cloud/inboxProcessor.js";
import { queueAndClaimChecks } from "./clients.js";
import { awsRuntime, type AwsRuntime } from "./runtime.js";
import { withTelemetry } from "../telemetry.js";
import { AWS_TELEMETRY } from "./telemetry.js";

/** SQS's longest `DelaySeconds` on a send. */
export const MAX_SEND_DELAY_SECONDS = 900;

/** A record that must come back later: SQS redelivers what the batch response lists. */
class RetryLater extends Error {
  override name = "RetryLater";
}

export async function settleOnSqs(runtime: AwsRuntime, message: ReceivedMessage, verdict: Verdict): Promise<void> {
  switch (verdict.action) {
    case "ack":
      return; // the event source mapping deletes it
    case "deadLetter":
      runtime.logger.error({ messageId: message.id, reason: verdict.reason }, "message dead-lettered");
      await (await runtime.queue()).deadLetter(message, verdict.reason);
      return;
    case "retry": {
      const direct = runtime.settings.WEBHOOKS_VERIFY_IN_PROCESSOR === "true";
      if (direct || verdict.delaySeconds > MAX_SEND_DELAY_SECONDS) {
        runtime.logger.info({ messageId: message.id, inboxId: verdict.inboxId, delaySeconds: verdict.delaySeconds }, "deferred: the inbox keeps the schedule, the relay runs the entry when due");
        return;
      }
      await (await runtime.queue()).send({ body: message.body, attributes: message.attributes, delaySeconds: verdict.delaySeconds });
      runtime.logger.info({ messageId: message.id, inboxId: verdict.inboxId, delaySeconds: verdict.delaySeconds }, "deferred: re-sent with a delay, original acked");
      return;
    }
    case "fail":
      // Once the inbox holds the entry, the inbox owns its retries (INBOX_RETRY_SCHEDULE, run by the
      // relay's inbox sweep, then quarantine), as locally and on Azure: the message is acked.
      if (verdict.inboxId) {
        runtime.logger.warn({ messageId: message.id, inboxId: verdict.inboxId, reason: verdict.reason }, "processing failed; the inbox retries the entry on its schedule");
        return;
      }
      throw new RetryLater(verdict.reason);
  }
}

/** The partners, for forwarding, when this processor is given them (direct ingress, or WEBHOOKS_PARTNERS). */
const forwardingPartners = (runtime: AwsRuntime) =>
  runtime.settings.WEBHOOKS_PARTNERS || runtime.settings.WEBHOOKS_PARTNER_SECRETS_ARN ? () => runtime.partners() : undefined;

export async function handleProcessor(runtime: AwsRuntime, event: SQSEvent): Promise<SQSBatchResponse> {
  const db = await runtime.database();
  const processor = inboxProcessorFor(db, runtime.tuning, runtime.logger);
  // Direct ingress: the SQS message limit (the queue's 256 KiB) bounds the body before this does.
  const verifyWith = runtime.settings.WEBHOOKS_VERIFY_IN_PROCESSOR === "true"
    ? { partners: await runtime.partners(), maxBodyBytes: runtime.tuning.MAX_INBOUND_BODY_BYTES }
    : undefined;
  return handleSqsEvent(event, async (message) => {
    const verdict = await processInbound({ db, processor, objectStore: runtime.objectStore, verifyWith, partners: forwardingPartners(runtime) }, message);
    await settleOnSqs(runtime, message, verdict);
  });
}

export const handler = withTelemetry(AWS_TELEMETRY, (event: SQSEvent): Promise<SQSBatchResponse> => handleProcessor(awsRuntime(queueAndClaimChecks), event));
