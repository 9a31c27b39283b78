/**
 * The Azure Functions (v4 programming model) handlers, apart from their registration so tests can
 * call them with a real `HttpRequest` / `InvocationContext`. Translate, call the core, translate back.
 */
import type { HttpRequest, HttpResponseInit, InvocationContext } from "@azure/functions";
import { acceptWebhook, NOT_READY_RETRY_AFTER_SECONDS } from "../../shared/cloud/acceptWebhook.js";
import { inboxProcessorFor } from "../../shared/cloud/inboxProcessor.js";
import { processInbound, type Verdict } from "../../shared/cloud/processInbound.js";
import type { HeaderBag } from "../../shared/inbound/verify/index.js";
import { fromServiceBusTrigger } from "../../shared/queue/triggers/serviceBus.js";
import { deadLetterCopy, failedAttempts, pendingDeadLetter, retryCopy } from "./failedMessages.js";
import type { AzureRuntime } from "./runtime.js";

export async function ingestHttp(runtime: AzureRuntime, request: HttpRequest): Promise<HttpResponseInit> {
  const headers: HeaderBag = {};
  request.headers.forEach((value, name) => { headers[name.toLowerCase()] = value; });
  const rawBody = Buffer.from(await request.arrayBuffer());
  let partners;
  try {
    partners = await runtime.partners();
  } catch (error) {
    runtime.logger.error({ err: error }, "ingest cannot start: configuration or secrets unavailable");
    return { status: 503, headers: { "retry-after": String(NOT_READY_RETRY_AFTER_SECONDS) }, jsonBody: { error: { code: "not_ready", message: "The ingest function is not ready; retry later." } } };
  }
  const targets = async () => ({ queue: await runtime.queue(), objectStore: runtime.objectStore });
  const answer = await acceptWebhook(
    // Up to what the stack allows (64 MiB on Azure); bodies over a Service Bus message go by claim-check.
    { partners, targets, maxBodyBytes: runtime.tuning.MAX_INBOUND_BODY_BYTES, logger: runtime.logger },
    request.params.partner ?? "", headers, rawBody,
  );
  return { status: answer.status, headers: answer.headers, body: JSON.stringify(answer.body) };
}

/** Thrown so the host abandons the message: Service Bus redelivers it, and dead-letters it after MaxDeliveryCount. */
export class AbandonMessage extends Error {
  override name = "AbandonMessage";
}

/**
 * Service Bus trigger. Returning completes the message; the host holds the lock, so every other
 * outcome is a message we send before returning (failedMessages.ts):
 * - processed or quarantined: complete;
 * - deferred: a copy scheduled for the entry's next attempt;
 * - a failure once the inbox holds the entry (processing failed, lease lost): complete; the inbox
 *   owns the retries from there (INBOX_RETRY_SCHEDULE, run by the relay's inbox sweep, then
 *   quarantine and its alert), as it does locally;
 * - a failure before the inbox (database down, claim-check unreadable): a copy scheduled with a
 *   growing delay, until WEBHOOKS_RETRY_MAX_ATTEMPTS, then dead-lettered;
 * - malformed: dead-lettered at once, with the reason as a property of the dead-lettered message.
 * If that send fails, we throw: the host abandons and Service Bus redelivers.
 */
export async function processServiceBusMessage(runtime: AzureRuntime, message: unknown, context: InvocationContext): Promise<void> {
  const received = fromServiceBusTrigger(message, context);
  const pending = pendingDeadLetter(received.attributes);
  if (pending !== undefined) throw new AbandonMessage(`on its way to the dead-letter subqueue: ${pending}`);
  const verdict = await judge(runtime, received);
  const { settings, logger } = runtime;
  const log = { messageId: received.id, eventId: received.attributes.eventId, partner: received.attributes.partner };
  switch (verdict.action) {
    case "ack":
      return;
    case "retry": {
      const queue = await runtime.queue();
      const delaySeconds = Math.min(verdict.delaySeconds, queue.limits.maxDelaySeconds);
      await queue.send({ body: received.body, attributes: received.attributes, delaySeconds });
      return;
    }
    case "fail": {
      if (verdict.inboxId) {
        logger.warn({ ...log, inboxId: verdict.inboxId, reason: verdict.reason }, "processing failed; the inbox retries the entry on its schedule");
        return;
      }
      const failed = failedAttempts(received.attributes, received.deliveryCount);
      if (failed < settings.WEBHOOKS_RETRY_MAX_ATTEMPTS) {
        const copy = retryCopy(received, failed, settings.WEBHOOKS_RETRY_BASE_SECONDS);
        logger.warn({ ...log, failedAttempts: failed, retryInSeconds: copy.delaySeconds, reason: verdict.reason }, "message failed; retrying after a delay");
        await (await runtime.queue()).send(copy);
        return;
      }
      return deadLetter(runtime, received, `failed ${failed} times, the last: ${verdict.reason}`, log);
    }
    case "deadLetter":
      return deadLetter(runtime, received, verdict.reason, log);
  }
}

/** The core's verdict; a database that cannot be opened is a failure like any other before the inbox. */
async function judge(runtime: AzureRuntime, received: ReturnType<typeof fromServiceBusTrigger>): Promise<Verdict> {
  let db;
  try {
    db = await runtime.database();
  } catch (error) {
    return { action: "fail", reason: `database unavailable: ${(error as Error).message}` };
  }
  return processInbound(
    // The claim-check store opens only for a claim-check message: a store that cannot open (no
    // IDENTITY_ENDPOINT, say) fails those messages, not the inline ones.
    { db, processor: inboxProcessorFor(db, runtime.tuning, runtime.logger), objectStore: runtime.objectStore, partners: runtime.settings.PARTNERS ? () => runtime.partners() : undefined },
    received,
  );
}

async function deadLetter(runtime: AzureRuntime, received: { body: string; attributes: Record<string, string | undefined> }, reason: string, log: object): Promise<void> {
  runtime.logger.error({ ...log, reason }, "message cannot be processed; moving it to the dead-letter subqueue with the reason as webhooksDeadLetterReason");
  await (await runtime.queue()).send(deadLetterCopy(received, reason));
}

// The relay's handler lives in its own module so the relay's bundle never reaches Service Bus code.
export { relayTimer } from "./relayTimer.js";
