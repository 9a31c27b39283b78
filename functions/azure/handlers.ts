/**
 * The Azure Functions (v4 programming model) handlers, apart from their registration so tests can
 * call them with a real `HttpRequest` / `InvocationContext`. Translate, call the core, translate back.
 */
import type { HttpRequest, HttpResponseInit, InvocationContext } from "@azure/functions";
import { acceptWebhook, NOT_READY_RETRY_AFTER_SECONDS } from "../../shared/cloud/acceptWebhook.js";
import { inboxProcessorFor } from "../../shared/cloud/inboxProcessor.js";
import { processInbound } from "../../shared/cloud/processInbound.js";
import type { HeaderBag } from "../../shared/inbound/verify/index.js";
import { fromServiceBusTrigger } from "../../shared/queue/triggers/serviceBus.js";
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
    { partners, targets, maxBodyBytes: runtime.tuning.MAX_PAYLOAD_BYTES, logger: runtime.logger },
    request.params.partner ?? "", headers, rawBody,
  );
  return { status: answer.status, headers: answer.headers, body: JSON.stringify(answer.body) };
}

/** Thrown so the host abandons the message: Service Bus redelivers it, then dead-letters it. */
export class AbandonMessage extends Error {
  override name = "AbandonMessage";
}

/**
 * Service Bus trigger. Returning completes the message. A failure, a malformed message and an
 * explicit dead-letter all throw: the host abandons, and after the queue's MaxDeliveryCount Service
 * Bus moves it to the dead-letter subqueue (the function does not own the lock, so it cannot
 * dead-letter directly; the reason is logged at error level). A deferral schedules a copy on the
 * queue for the entry's next attempt and completes the original.
 */
export async function processServiceBusMessage(runtime: AzureRuntime, message: unknown, context: InvocationContext): Promise<void> {
  const received = fromServiceBusTrigger(message, context);
  const db = await runtime.database();
  const verdict = await processInbound(
    // The claim-check store opens only for a claim-check message: a store that cannot open (no
    // IDENTITY_ENDPOINT, say) fails those messages, not the inline ones.
    { db, processor: inboxProcessorFor(db, runtime.tuning, runtime.logger), objectStore: runtime.objectStore },
    received,
  );
  switch (verdict.action) {
    case "ack":
      return;
    case "retry": {
      const queue = await runtime.queue();
      const delaySeconds = Math.min(verdict.delaySeconds, queue.limits.maxDelaySeconds);
      await queue.send({ body: received.body, attributes: received.attributes, delaySeconds });
      return;
    }
    case "deadLetter":
      runtime.logger.error({ messageId: received.id, deliveryCount: received.deliveryCount, reason: verdict.reason }, "message cannot be processed; abandoning until Service Bus dead-letters it");
      throw new AbandonMessage(verdict.reason);
    case "fail":
      throw new AbandonMessage(verdict.reason);
  }
}

// The relay's handler lives in its own module so the relay's bundle never reaches Service Bus code.
export { relayTimer } from "./relayTimer.js";
