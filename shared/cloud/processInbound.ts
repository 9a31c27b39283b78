/**
 * Cloud processor core: one queue message → inbox (de-duplicated by the unique constraint) →
 * reconciler and business change in one transaction → a verdict the trigger translates into its
 * native settlement (SQS partial batch response, Service Bus complete/abandon, Pub/Sub 2xx/non-2xx).
 *
 * | inbox result                 | verdict                                              |
 * |------------------------------|------------------------------------------------------|
 * | processed, quarantined       | ack (a quarantined entry is the inbox's dead letter)  |
 * | deferred                     | retry after the entry's next attempt time             |
 * | failed, lease lost, waiting  | fail with the inbox id: the inbox owns the retries    |
 * | message malformed            | dead-letter with the reason (never dropped)           |
 * | database or claim-check down | fail (native retry)                                   |
 */
import type { Database } from "../db/port.js";
import { ensureForwardSubscriptions, storeAndForward } from "../inbound/forward.js";
import { storeInboxEntry, type NewInboxEntry } from "../inbound/inbox.js";
import type { InboxProcessor } from "../inbound/processor.js";
import { screenInbound } from "../inbound/screen.js";
import type { PartnerConfig } from "../inbound/verify/index.js";
import type { ObjectStore } from "../objectStore/port.js";
import { MalformedMessageError, type ReceivedMessage } from "../queue/port.js";
import { decodeInboundMessage, type InboundMessage } from "./inboundMessage.js";
import { validTraceparent } from "../telemetry/telemetry.js";

export type Verdict =
  | { action: "ack"; inboxId: string; result: string }
  | { action: "retry"; delaySeconds: number; inboxId: string; reason: string }
  | { action: "fail"; reason: string; inboxId?: string }
  | { action: "deadLetter"; reason: string };

export interface ProcessInboundDeps {
  db: Database;
  processor: Pick<InboxProcessor, "runEntry">;
  /**
   * Opens (or returns the memoised) claim-check store; called only for a message that is a
   * claim-check reference, so a store that cannot open fails those messages and no others.
   * Absent, or resolving to undefined: no store is configured.
   */
  objectStore?: () => Promise<ObjectStore | undefined>;
  now?: () => Date;
  /**
   * Direct ingress (AWS API Gateway → SQS, no ingest function): the message is the raw request
   * body with the partner and signature headers as attributes, so the signature is checked here.
   */
  verifyWith?: { partners: ReadonlyMap<string, PartnerConfig>; maxBodyBytes: number };
  /**
   * The function's partners (memoised by the runtime): a partner with `forward` has its event
   * enqueued to the outbox in the inbox write's transaction (shared/inbound/forward.ts).
   * Absent: nothing is forwarded.
   */
  partners?: () => Promise<ReadonlyMap<string, PartnerConfig>>;
}

// The forward subscriptions follow the configuration once per database (a cold start).
const subscriptionsReady = new WeakMap<object, Promise<void>>();

async function store(deps: ProcessInboundDeps, entry: NewInboxEntry) {
  const partners = deps.partners ? await deps.partners() : deps.verifyWith?.partners;
  const partner = partners?.get(entry.partnerName);
  if (!partner?.forward) return storeInboxEntry(deps.db, entry);
  let ready = subscriptionsReady.get(deps.db);
  if (!ready) subscriptionsReady.set(deps.db, (ready = ensureForwardSubscriptions(deps.db, partners!)));
  await ready.catch((error) => { subscriptionsReady.delete(deps.db); throw error; });
  return storeAndForward(deps.db, partner, entry);
}

/** Reads a direct-ingress message: verifies it now; a forgery is dead-lettered, never applied. */
function decodeDirect(verifyWith: NonNullable<ProcessInboundDeps["verifyWith"]>, message: Pick<ReceivedMessage, "id" | "body" | "attributes">, now: Date): InboundMessage {
  const { partner, ...headers } = message.attributes ?? {};
  const raw = Buffer.from(message.body, "utf8");
  const screened = screenInbound(verifyWith.partners, verifyWith.maxBodyBytes, partner ?? "", headers, raw, now);
  if (!screened.ok) throw new MalformedMessageError(`Message ${message.id} refused at verification (${screened.status} ${screened.code}): ${screened.message}`);
  return {
    v: 1,
    partner: screened.partner.name,
    eventId: screened.eventId,
    eventType: screened.eventType,
    receivedAt: now.toISOString(),
    payloadBase64: raw.toString("base64"),
  };
}

export async function processInbound(deps: ProcessInboundDeps, message: Pick<ReceivedMessage, "id" | "body" | "attributes">): Promise<Verdict> {
  let decoded: InboundMessage;
  try {
    decoded = deps.verifyWith ? decodeDirect(deps.verifyWith, message, deps.now?.() ?? new Date()) : decodeInboundMessage(message);
  } catch (error) {
    if (error instanceof MalformedMessageError) return { action: "deadLetter", reason: error.message };
    throw error;
  }
  let payload: Buffer;
  if (decoded.claimCheck !== undefined) {
    let store: ObjectStore | undefined;
    try {
      store = await deps.objectStore?.();
    } catch (error) {
      return { action: "fail", reason: `claim-check store unavailable: ${(error as Error).message}` };
    }
    if (!store) return { action: "deadLetter", reason: `Message ${message.id} refers to claim-check ${decoded.claimCheck} but no claim-check store is configured.` };
    try {
      payload = await store.get(decoded.claimCheck);
    } catch (error) {
      return { action: "fail", reason: `claim-check unreadable: ${(error as Error).message}` };
    }
  } else {
    payload = Buffer.from(decoded.payloadBase64 ?? "", "base64");
  }

  let inboxId: string;
  try {
    const stored = await store(deps, {
      partnerName: decoded.partner,
      partnerEventId: decoded.eventId,
      eventType: decoded.eventType,
      payload,
      // The ingest function verified the signature before it queued the message.
      signatureVerified: true,
      receivedAt: new Date(decoded.receivedAt),
      // The ingest's trace context (message attribute; with direct ingress, the sender's header):
      // processing continues that trace. Only a well-formed one is kept.
      traceparent: validTraceparent(message.attributes?.traceparent),
    });
    inboxId = stored.id;
  } catch (error) {
    return { action: "fail", reason: `inbox unavailable: ${(error as Error).message}` };
  }

  let run;
  try {
    run = await deps.processor.runEntry(inboxId);
  } catch (error) {
    return { action: "fail", inboxId, reason: `processing interrupted: ${(error as Error).message}` };
  }
  switch (run.result) {
    case "processed":
    case "quarantined":
    case "settled":
      return { action: "ack", inboxId, result: run.result };
    case "deferred": {
      const now = deps.now?.() ?? new Date();
      const delaySeconds = Math.max(0, Math.ceil(((run.nextAttemptAt?.getTime() ?? now.getTime()) - now.getTime()) / 1000));
      return { action: "retry", delaySeconds, inboxId, reason: "deferred: prerequisite missing" };
    }
    case "failed":
      return { action: "fail", inboxId, reason: run.lastError ?? "processing failed" };
    case "waiting":
      return { action: "fail", inboxId, reason: `failed before; its next retry is due at ${run.nextAttemptAt?.toISOString()} (INBOX_RETRY_SCHEDULE)` };
    case "lost":
    case "busy":
      return { action: "fail", inboxId, reason: "another processor holds this entry; retry later" };
  }
}
