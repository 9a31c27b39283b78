/**
 * Forwarding, no code: a partner configured with `forward` has each verified, de-duplicated event
 * enqueued to the outbox in the same transaction as its inbox write, and delivered to your services
 * with everything outbound has (Standard Webhooks signature with the destination's secret, retries,
 * endpoint health, dead letters, replay). The request's body is the partner's original bytes (or
 * what the destination's transformation makes of them); its headers say which partner sent it and
 * the partner's event id and type.
 *
 * A partner forwards to its destinations (issue 30): each is an outbound subscription of the
 * platform's own application (`app_platform`: operator-only, never an application key's), named
 * in `inbound_forward_destinations`, with an optional filter (shared/outbound/filters.ts) and
 * transformation (run by the relay like any subscription's). `default` is the destination of
 * `forward.url`, the subscription `fwd_<partner>`, kept in step with the configuration at start
 * (`ensureForwardSubscriptions`); the others are added through the API (forwardDestinations.ts).
 * Which destinations took an entry, and which were skipped by their filter, is written on the
 * entry (`inbox_entries.forwarding`), so no accepted event is dropped unseen.
 */
import type { Database, Queryable } from "../db/port.js";
import { NOTIFY_CHANNEL } from "../outbound/notify.js";
import { sealSecrets } from "../crypto/subscriptionSecrets.js";
import { PLATFORM_APPLICATION_ID } from "../tenancy/defaults.js";
import { matchesFilter, type Filter } from "../outbound/filters.js";
import { storeInboxEntry, type ForwardOutcome, type NewInboxEntry, type StoreResult } from "./inbox.js";

export type { ForwardOutcome };
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

/** The destination of a partner's `forward.url` (PARTNERS). */
export const DEFAULT_DESTINATION = "default";

/**
 * Creates or updates the `default` destination of every partner whose `forward` has a url (its
 * subscription's url and secrets follow the configuration); a partner with `forward: true` has
 * none (its subscription, if it had one, stays with its history but is no longer forwarded to).
 */
export async function ensureForwardSubscriptions(db: Queryable, partners: ReadonlyMap<string, PartnerConfig>): Promise<void> {
  for (const p of partners.values()) {
    if (!p.forward) continue;
    if (p.forward === true) {
      await db.query("DELETE FROM inbound_forward_destinations WHERE partner = $1 AND name = $2", [p.name, DEFAULT_DESTINATION]);
      continue;
    }
    await db.query(
      `WITH sub AS (
         INSERT INTO outbound_subscriptions (id, url, event_types, secrets, description, application_id)
         VALUES ($1, $2, ARRAY[$3::text], $4::text[], $5, $6)
         ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, event_types = EXCLUDED.event_types, secrets = EXCLUDED.secrets,
           description = EXCLUDED.description, application_id = EXCLUDED.application_id, deleted_at = NULL, updated_at = now()
         RETURNING id
       )
       INSERT INTO inbound_forward_destinations (partner, name, subscription_id) SELECT $7, $8, id FROM sub
       ON CONFLICT (partner, name) DO UPDATE SET subscription_id = EXCLUDED.subscription_id`,
      // Stored encrypted like every subscription's secrets (shared/crypto/subscriptionSecrets.ts).
      [forwardSubscriptionId(p.name), p.forward.url, forwardEventType(p.name), sealSecrets(forwardSubscriptionId(p.name), p.forward.secrets), `forwarding of partner ${p.name} (PARTNERS)`, PLATFORM_APPLICATION_ID, p.name, DEFAULT_DESTINATION],
    );
  }
}

/**
 * What a destination's filter is evaluated on: the partner's event as the outbound filters read
 * an event, so one filter language serves both: `id` and `type` as the partner's scheme gives them,
 * `timestamp` when it was received, `data` the partner's JSON body.
 */
export function forwardFilterView(e: NewInboxEntry): { id: string; type: string | null; timestamp: string; data: unknown } {
  return { id: e.partnerEventId, type: e.eventType, timestamp: e.receivedAt.toISOString(), data: JSON.parse(e.payload.toString("utf8")) };
}

/**
 * Enqueues the forward of a newly stored entry to each of its partner's destinations whose filter
 * matches, in `tx`, and writes on the entry what was done for each destination. The event id
 * derives from the entry (enqueued once), each delivery's from the event and the destination's
 * subscription. No destination matching: no outbound event, the entry says why.
 */
export async function enqueueForward(tx: Queryable, partner: string, inboxId: string, e: NewInboxEntry): Promise<ForwardOutcome[]> {
  const { rows: destinations } = await tx.query<{ name: string; subscription_id: string; filter: Filter | null }>(
    `SELECT d.name, d.subscription_id, s.filter FROM inbound_forward_destinations d
     JOIN outbound_subscriptions s ON s.id = d.subscription_id AND s.deleted_at IS NULL
     WHERE d.partner = $1 ORDER BY d.name`,
    [partner],
  );
  const eventId = `fwd_${inboxId}`;
  // Evaluated here, in JavaScript (the same rules as the fan-out's jsonpath, property-tested both
  // ways in test/outbound/filters.property.test.ts): a body PostgreSQL's jsonb refuses (a \u0000
  // escape) is still forwarded or skipped by its filter, never refused after it was accepted.
  const view = destinations.some((d) => d.filter) ? forwardFilterView(e) : null;
  const outcomes: ForwardOutcome[] = destinations.map((d) => d.filter && !matchesFilter(d.filter, view)
    ? { destination: d.name, subscriptionId: d.subscription_id, outcome: "skipped", reason: "the destination's filter does not match this event" }
    : { destination: d.name, subscriptionId: d.subscription_id, outcome: "enqueued", deliveryId: `${eventId}:${d.subscription_id}` });
  const targets = outcomes.filter((o) => o.outcome === "enqueued").map((o) => o.subscriptionId);
  const headers = { [FORWARD_HEADERS.partner]: partner, [FORWARD_HEADERS.eventId]: e.partnerEventId, ...(e.eventType ? { [FORWARD_HEADERS.eventType]: e.eventType } : {}) };
  await tx.query(
    `WITH event AS (
       INSERT INTO outbound_events (id, type, body, headers, application_id)
       SELECT $1, $2, $3, $4::jsonb, $7 WHERE cardinality($5::text[]) > 0
       ON CONFLICT (id) DO NOTHING RETURNING id
     ), delivery AS (
       INSERT INTO outbound_deliveries (id, event_id, subscription_id)
       SELECT event.id || ':' || target, event.id, target FROM event, unnest($5::text[]) AS target
       RETURNING id
     ), noted AS (
       UPDATE inbox_entries SET forwarding = $8::jsonb WHERE id = $9::uuid RETURNING id
     )
     SELECT (SELECT count(*) FROM noted) AS noted, pg_notify($6, '') FROM (SELECT 1 FROM delivery LIMIT 1) AS any_delivery`,
    // Verification accepted only UTF-8 JSON, so the text is the bytes exactly.
    [eventId, forwardEventType(partner), e.payload.toString("utf8"), JSON.stringify(headers), targets, NOTIFY_CHANNEL, PLATFORM_APPLICATION_ID, JSON.stringify(outcomes), inboxId],
  );
  return outcomes;
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
