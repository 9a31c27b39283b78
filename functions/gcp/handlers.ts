/**
 * The Cloud Run functions (gen2, Functions Framework) handlers, apart from their registration so
 * tests can call them with real Express-shaped requests. Translate, call the core, translate back.
 */
import type { Request, Response } from "@google-cloud/functions-framework";
import { acceptWebhook, NOT_READY_RETRY_AFTER_SECONDS } from "../../shared/cloud/acceptWebhook.js";
import { inboxProcessorFor } from "../../shared/cloud/inboxProcessor.js";
import { processInbound } from "../../shared/cloud/processInbound.js";
import { runScheduledRelay } from "../../shared/cloud/relay.js";
import type { HeaderBag } from "../../shared/inbound/verify/index.js";
import type { ReceivedMessage } from "../../shared/queue/port.js";
import { handlePubSubPush } from "../../shared/queue/triggers/pubsub.js";
import type { GcpRuntime } from "./runtime.js";
import { observeGauges } from "../telemetry.js";
import { GCP_TELEMETRY } from "./telemetry.js";
import { sendJson } from "./sendJson.js";

/** `POST …/webhooks/<partner>` (API Gateway keeps the path). */
export async function ingestHttp(runtime: GcpRuntime, req: Request, res: Response): Promise<void> {
  if (req.method !== "POST") return sendJson(res, 405, { error: { code: "method_not_allowed", message: "Send webhooks with POST." } }, { allow: "POST" });
  const partner = decodeURIComponent(/\/webhooks\/([^/]+)\/?$/.exec(req.path)?.[1] ?? "");
  const rawBody = req.rawBody ?? Buffer.alloc(0);
  const headers: HeaderBag = { ...req.headers };
  let partners;
  try {
    partners = await runtime.partners();
  } catch (error) {
    runtime.logger.error({ err: error }, "ingest cannot start: configuration or secrets unavailable");
    return sendJson(res, 503, { error: { code: "not_ready", message: "The ingest function is not ready; retry later." } }, { "retry-after": String(NOT_READY_RETRY_AFTER_SECONDS) });
  }
  const targets = async () => ({ queue: await runtime.topic(), objectStore: runtime.objectStore });
  const answer = await acceptWebhook(
    // Up to what the gateway and Cloud Run carry (the stack sets it); above one publish, by claim-check.
    { partners, targets, maxBodyBytes: runtime.tuning.MAX_INBOUND_BODY_BYTES, logger: runtime.logger },
    partner, headers, rawBody,
  );
  res.status(answer.status).set(answer.headers).send(JSON.stringify(answer.body));
}

/** Same name as REASON_ATTRIBUTE in shared/queue/pubsub.ts, whose `receiveDeadLetters` reads it. */
const REASON_ATTRIBUTE = "deadLetterReason";
/** Pub/Sub's limit on an attribute value. */
const MAX_ATTRIBUTE_VALUE_BYTES = 1024;

/**
 * Pub/Sub push. 204 acks. A deferral is acked: Pub/Sub cannot hold one message back, so the inbox
 * keeps the schedule and the relay's inbox sweep picks the entry up when it falls due; so is a
 * failure once the inbox holds the entry (retried on INBOX_RETRY_SCHEDULE, then quarantined).
 *
 * A dead-letter verdict (a malformed message), or a failure on the subscription's last delivery
 * attempt, is published to the dead-letter topic by the processor itself, with the reason in a
 * `deadLetterReason` attribute, and then acked: Pub/Sub's own forwarding carries no reason. Other
 * failures (before the inbox: database or claim-check unreachable) answer 500 and Pub/Sub redelivers with the subscription's backoff; a message refused
 * before it reached this code (429 while every instance is busy) is forwarded by Pub/Sub after the
 * last attempt, without a reason.
 */
export async function processPush(runtime: GcpRuntime, req: Request, res: Response): Promise<void> {
  const db = await runtime.database();
  const processor = inboxProcessorFor(db, runtime.tuning, runtime.logger);
  const lastAttempt = runtime.settings.WEBHOOKS_MAX_DELIVERY_ATTEMPTS;
  const answer = await handlePubSubPush(req.body, async (message) => {
    const verdict = await processInbound({ db, processor, objectStore: runtime.objectStore, partners: runtime.settings.PARTNERS ? () => runtime.partners() : undefined }, message);
    if (verdict.action === "ack" || verdict.action === "retry") return;
    if (verdict.action === "fail" && verdict.inboxId) {
      // The inbox holds the entry and owns its retries (INBOX_RETRY_SCHEDULE, the relay's inbox
      // sweep, then quarantine), as locally and on Azure: acked, never retried on Pub/Sub's backoff.
      runtime.logger.warn({ messageId: message.id, inboxId: verdict.inboxId, reason: verdict.reason }, "processing failed; the inbox retries the entry on its schedule");
      return;
    }
    const giveUp = verdict.action === "deadLetter" || (lastAttempt !== undefined && message.deliveryCount >= lastAttempt);
    if (giveUp && (await deadLetter(runtime, message, verdict.reason))) return;
    throw new Error(verdict.reason);
  }, { onError: (error, message) => runtime.logger.warn({ err: error, messageId: message.id, deliveryCount: message.deliveryCount }, "push message not processed; nacked") });
  res.status(answer.status).send(answer.body);
}

/** Publishes the message to the dead-letter topic with its reason; false when no topic is configured. A failed publish throws (the push is nacked and comes back). */
async function deadLetter(runtime: GcpRuntime, message: ReceivedMessage, reason: string): Promise<boolean> {
  const topic = await runtime.deadLetterTopic();
  runtime.logger.error({ messageId: message.id, deliveryCount: message.deliveryCount, reason, deadLetterTopic: runtime.settings.WEBHOOKS_DEAD_LETTER_TOPIC }, "message dead-lettered");
  if (!topic) return false;
  const cut = Buffer.from(reason).subarray(0, MAX_ATTRIBUTE_VALUE_BYTES).toString("utf8").replace(/\uFFFD$/, "");
  await topic.send({ body: message.body, attributes: { ...message.attributes, originalMessageId: message.id, [REASON_ATTRIBUTE]: cut } });
  return true;
}

/**
 * Cloud Scheduler → HTTP (OIDC-authenticated by Cloud Run), or in scheduled mode the management
 * function's wake-up (`{"wake": true}`, with its own ID token): deliver within the budget,
 * listening (`listening` mode) or until idle.
 */
/**
 * A woken run: the management function's `{"wake": true}`, as the wake-up topic's push
 * subscription delivers it (`{"message": {"data": <base64>}, "subscription": …}`), or posted as it
 * is. Cloud Scheduler's tick posts nothing of the kind.
 */
export function isWakeUp(body: unknown): boolean {
  if (typeof body !== "object" || body === null) return false;
  if ((body as { wake?: unknown }).wake === true) return true;
  const data = (body as { message?: { data?: unknown } }).message?.data;
  if (typeof data !== "string") return false;
  try {
    return (JSON.parse(Buffer.from(data, "base64").toString("utf8")) as { wake?: unknown })?.wake === true;
  } catch {
    return false;
  }
}

export async function relayHttp(runtime: GcpRuntime, req: Request, res: Response): Promise<void> {
  const deadline = Date.now() + runtime.settings.WEBHOOKS_RELAY_BUDGET_SECONDS * 1000;
  const db = await runtime.database();
  await observeGauges(GCP_TELEMETRY, db);
  const woken = isWakeUp(req.body);
  sendJson(res, 200, await runScheduledRelay(db, runtime.tuning, runtime.logger, () => deadline - Date.now(), { mode: runtime.settings.WEBHOOKS_RELAY_MODE, woken }));
}
