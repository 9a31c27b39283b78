/**
 * Cloud ingest: verify, then make the event durable on the cloud queue before answering 2xx.
 * The inbox de-duplicates later, in the processor; here a duplicate is simply queued again.
 * If the queue (or the claim-check store) refuses, answer 503 so the sender retries.
 */
import type { Logger } from "pino";
import { screenInbound } from "../inbound/screen.js";
import type { HeaderBag, PartnerConfig } from "../inbound/verify/index.js";
import type { ObjectStore } from "../objectStore/port.js";
import type { QueueAdapter } from "../queue/port.js";
import { messageBytes } from "../queue/validate.js";
import { claimCheckMessage, inlineMessage } from "./inboundMessage.js";
import { failuresOf } from "../telemetry/repeatedFailures.js";
import { activeTraceparent, recordInboxReceived, setSpanAttributes, validTraceparent, withSpan } from "../telemetry/telemetry.js";
import { SPANS } from "../telemetry/names.js";

/** Where a verified event goes: the queue, and where payloads above its limit go (without one, 413). */
export interface AcceptTargets {
  queue: Pick<QueueAdapter, "send" | "limits">;
  /**
   * Opens the claim-check store; asked only for a payload above the queue's limit, so a store that
   * cannot open refuses (503) only the large events, not every event.
   */
  objectStore?: () => Promise<ObjectStore | undefined>;
}

export interface AcceptDeps {
  partners: ReadonlyMap<string, PartnerConfig>;
  /**
   * Opens (or returns the memoised) queue, and gives the claim-check store's opener. Called only once a request has
   * passed verification, so a forged or malformed request on a cold instance never pays for
   * loading a cloud SDK; a failure to open answers 503 `not_ready`.
   */
  targets: () => Promise<AcceptTargets>;
  maxBodyBytes: number;
  now?: () => Date;
  logger?: Logger;
}

export interface AcceptResponse {
  status: number;
  headers: Record<string, string>;
  body: { received: true; eventId: string; claimCheck: boolean } | { error: { code: string; message: string } };
}

export const RETRY_AFTER_SECONDS = 5;
/** A function that cannot reach its configuration or its queue: longer, as a fix takes a while. */
export const NOT_READY_RETRY_AFTER_SECONDS = 30;
const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

function refuse(status: number, code: string, message: string, extra: Record<string, string> = {}): AcceptResponse {
  return { status, headers: { ...JSON_HEADERS, ...extra }, body: { error: { code, message } } };
}

/**
 * Never throws: every outcome is an HTTP answer. In a span `webhooks.inbox.ingest` (a server span,
 * as the local platform's), the host SDK's span's child when one traces the request, else the
 * continuation of the sender's `traceparent`; counted in `webhooks.inbox.received`.
 * Without an SDK both are no-ops.
 */
export async function acceptWebhook(deps: AcceptDeps, partnerName: string, headers: HeaderBag, rawBody: Buffer): Promise<AcceptResponse> {
  const sender = activeTraceparent() ? null : validTraceparent(headers.traceparent);
  return withSpan(SPANS.inboxIngest, { "http.request.method": "POST", "http.route": "/webhooks/:partner", "webhooks.partner": partnerName.slice(0, 40) }, async (span) => {
    const answer = await accept(deps, partnerName, headers, rawBody);
    const outcome = answer.status >= 200 && answer.status < 300 ? "accepted" : "rejected";
    setSpanAttributes(span, { "http.response.status_code": answer.status, "webhooks.outcome": outcome });
    recordInboxReceived(partnerName, outcome);
    return answer;
  }, sender);
}

async function accept(deps: AcceptDeps, partnerName: string, headers: HeaderBag, rawBody: Buffer): Promise<AcceptResponse> {
  const now = deps.now?.() ?? new Date();
  const screened = screenInbound(deps.partners, deps.maxBodyBytes, partnerName, headers, rawBody, now);
  if (!screened.ok) return refuse(screened.status, screened.code, screened.message);

  let targets: AcceptTargets;
  try {
    targets = await deps.targets();
  } catch (error) {
    deps.logger?.error({ err: error }, "ingest cannot start: the queue or claim-check store could not be opened");
    return refuse(503, "not_ready", "The ingest function is not ready; retry later.", { "retry-after": String(NOT_READY_RETRY_AFTER_SECONDS) });
  }
  const { queue } = targets;

  // The host's span when its SDK traces this request (an ADOT layer, …), else the sender's own
  // traceparent: the processor continues either (null: neither, no attribute).
  const traceparent = activeTraceparent() ?? validTraceparent(headers.traceparent);
  const event = { partner: screened.partner.name, eventId: screened.eventId, eventType: screened.eventType, receivedAt: now, traceparent };
  let message = inlineMessage(event, rawBody);
  const claimCheck = messageBytes(message) > queue.limits.maxMessageBytes;
  try {
    if (claimCheck) {
      const objectStore = await targets.objectStore?.();
      if (!objectStore) {
        return refuse(413, "payload_too_large", `The encoded event is ${messageBytes(message)} bytes, over the queue's limit of ${queue.limits.maxMessageBytes}, and no claim-check store is configured.`);
      }
      const key = `inbound/${encodeURIComponent(event.partner)}/${encodeURIComponent(event.eventId)}`;
      const reference = await objectStore.put(key, rawBody, "application/json");
      message = claimCheckMessage(event, reference);
    }
    await queue.send(message);
  } catch (error) {
    failuresOf(deps.logger).record("ingest:queue_unavailable", "warn", { err: error, partner: event.partner, eventId: event.eventId }, "inbound event not queued; answered 503");
    return refuse(503, "queue_unavailable", "The event could not be queued; it was not accepted. Retry later.", { "retry-after": String(RETRY_AFTER_SECONDS) });
  }
  return { status: 202, headers: JSON_HEADERS, body: { received: true, eventId: event.eventId, claimCheck } };
}
