/**
 * Forwarding, no code: a partner configured with `forward` has each verified, de-duplicated event
 * enqueued to the outbox in the same transaction as its inbox write, and delivered to your service
 * with everything outbound has (Standard Webhooks signature with the forward secret, retries,
 * endpoint health, dead letters, replay). The request's body is the partner's original bytes; its
 * headers say which partner sent it and the partner's event id and type.
 *
 * Each forwarding partner has one subscription, `fwd_<partner>`, kept in step with the
 * configuration at start (`ensureForwardSubscriptions`). It and the forwarded events belong to the
 * platform's own application (`app_platform`): operator-only, never an application key's.
 */
import type { Database, Queryable } from "../db/port.js";
import { NOTIFY_CHANNEL } from "../outbound/notify.js";
import { sealSecrets } from "../crypto/subscriptionSecrets.js";
import { PLATFORM_APPLICATION_ID } from "../tenancy/defaults.js";
import { storeInboxEntry, type NewInboxEntry, type StoreResult } from "./inbox.js";
import type { PartnerConfig } from "./verify/index.js";

/** Headers of a forwarded request (besides the Standard Webhooks ones). */
export const FORWARD_HEADERS = {
  partner: "webhooks-partner",
  eventId: "webhooks-partner-event-id",
  eventType: "webhooks-partner-event-type",
} as const;

export const forwardSubscriptionId = (partner: string): string => `fwd_${partner}`;
/** The outbound event type of forwarded events (only the forward subscription selects it). */
export const forwardEventType = (partner: string): string => `webhooks.forward.${partner}`;

/** Creates or updates the subscription of every forwarding partner (url, secrets). */
export async function ensureForwardSubscriptions(db: Queryable, partners: ReadonlyMap<string, PartnerConfig>): Promise<void> {
  for (const p of partners.values()) {
    if (!p.forward) continue;
    await db.query(
      `INSERT INTO outbound_subscriptions (id, url, event_types, secrets, description, application_id)
       VALUES ($1, $2, ARRAY[$3::text], $4::text[], $5, $6)
       ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, event_types = EXCLUDED.event_types, secrets = EXCLUDED.secrets,
         description = EXCLUDED.description, application_id = EXCLUDED.application_id, deleted_at = NULL, updated_at = now()`,
      // Stored encrypted like every subscription's secrets (shared/crypto/subscriptionSecrets.ts).
      [forwardSubscriptionId(p.name), p.forward.url, forwardEventType(p.name), sealSecrets(forwardSubscriptionId(p.name), p.forward.secrets), `forwarding of partner ${p.name} (PARTNERS)`, PLATFORM_APPLICATION_ID],
    );
  }
}

/** Enqueues the forward of a newly stored entry, in `tx`. The event id derives from the entry: enqueued once. */
export async function enqueueForward(tx: Queryable, partner: string, inboxId: string, e: NewInboxEntry): Promise<void> {
  const eventId = `fwd_${inboxId}`;
  const headers = { [FORWARD_HEADERS.partner]: partner, [FORWARD_HEADERS.eventId]: e.partnerEventId, ...(e.eventType ? { [FORWARD_HEADERS.eventType]: e.eventType } : {}) };
  await tx.query(
    `WITH event AS (
       INSERT INTO outbound_events (id, type, body, headers, application_id) VALUES ($1, $2, $3, $4::jsonb, $7)
       ON CONFLICT (id) DO NOTHING RETURNING id
     ), delivery AS (
       INSERT INTO outbound_deliveries (id, event_id, subscription_id)
       SELECT id || ':' || $5, id, $5 FROM event
       RETURNING id
     )
     SELECT pg_notify($6, '') FROM delivery`,
    // Verification accepted only UTF-8 JSON, so the text is the bytes exactly.
    [eventId, forwardEventType(partner), e.payload.toString("utf8"), JSON.stringify(headers), forwardSubscriptionId(partner), NOTIFY_CHANNEL, PLATFORM_APPLICATION_ID],
  );
}

/**
 * `storeInboxEntry` and, for a new entry, its forward, in one transaction: a duplicate or a
 * concurrent repeat (held on the unique key until the first commits) is never forwarded twice.
 */
export function storeAndForward(db: Database, partner: PartnerConfig, e: NewInboxEntry): Promise<StoreResult> {
  return db.transaction(async (tx) => {
    const stored = await storeInboxEntry(tx, e);
    if (stored.kind === "stored") await enqueueForward(tx, partner.name, stored.id, e);
    return stored;
  });
}
