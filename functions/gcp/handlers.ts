/**
 * The Cloud Run functions (gen2, Functions Framework) handlers, apart from their registration so
 * tests can call them with real Express-shaped requests. Translate, call the core, translate back.
 */
import type { Request, Response } from "@google-cloud/functions-framework";
import { acceptWebhook, NOT_READY_RETRY_AFTER_SECONDS } from "../../shared/cloud/acceptWebhook.js";
import { drainOutbox } from "../../shared/cloud/drainOutbox.js";
import { inboxProcessorFor } from "../../shared/cloud/inboxProcessor.js";
import { processInbound } from "../../shared/cloud/processInbound.js";
import { relayFor } from "../../shared/cloud/relay.js";
import type { HeaderBag } from "../../shared/inbound/verify/index.js";
import { handlePubSubPush } from "../../shared/queue/triggers/pubsub.js";
import type { GcpRuntime } from "./runtime.js";

function sendJson(res: Response, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.status(status).set({ "content-type": "application/json; charset=utf-8", ...headers }).send(JSON.stringify(body));
}

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
    { partners, targets, maxBodyBytes: runtime.tuning.MAX_PAYLOAD_BYTES, logger: runtime.logger },
    partner, headers, rawBody,
  );
  res.status(answer.status).set(answer.headers).send(JSON.stringify(answer.body));
}

/**
 * Pub/Sub push. 204 acks. Failures, malformed and dead-letter verdicts answer non-2xx: Pub/Sub
 * redelivers with the subscription's backoff and, after max delivery attempts, forwards the
 * message to the dead-letter topic (the reason is logged at error level). A deferral is acked:
 * Pub/Sub cannot hold one message back, so the inbox keeps the schedule and the scheduled relay
 * picks the entry up when it falls due.
 */
export async function processPush(runtime: GcpRuntime, req: Request, res: Response): Promise<void> {
  const db = await runtime.database();
  const processor = inboxProcessorFor(db, runtime.tuning, runtime.logger);
  const answer = await handlePubSubPush(req.body, async (message) => {
    const verdict = await processInbound({ db, processor, objectStore: runtime.objectStore }, message);
    if (verdict.action === "ack" || verdict.action === "retry") return;
    if (verdict.action === "deadLetter") runtime.logger.error({ messageId: message.id, deliveryCount: message.deliveryCount, reason: verdict.reason }, "message cannot be processed; nacking until Pub/Sub dead-letters it");
    throw new Error(verdict.reason);
  }, { onError: (error, message) => runtime.logger.warn({ err: error, messageId: message.id }, "push message not processed; nacked") });
  res.status(answer.status).send(answer.body);
}

/** Cloud Scheduler → HTTP (OIDC-authenticated by Cloud Run): drain within the budget. */
export async function relayHttp(runtime: GcpRuntime, _req: Request, res: Response): Promise<void> {
  const deadline = Date.now() + runtime.settings.WEBHOOKS_RELAY_BUDGET_SECONDS * 1000;
  const db = await runtime.database();
  const { relay, purge, passReserveMs, close } = relayFor(db, runtime.tuning, runtime.logger);
  try {
    const summary = await drainOutbox({ relay, purge, reserveMs: passReserveMs, inbox: inboxProcessorFor(db, runtime.tuning, runtime.logger), remainingMs: () => deadline - Date.now() });
    runtime.logger.info(summary, "relay run finished");
    sendJson(res, 200, summary);
  } finally {
    await close();
  }
}
