/**
 * `encryption_key.missing` operational events (issue 29): deliveries waiting, unsent, because a
 * secret of their subscription is under a key id this platform's ENCRYPTION_KEYS lacks (a rotation
 * that dropped the old key too early, a process started with the wrong keys; docs/secrets.md).
 * The relay already puts such a delivery back with `last_error` 'secrets unreadable: …' naming the
 * key (shared/outbound/sql/deferUnsent.ts, indexed by migration 019); the alert poller looks for
 * them and raises one event per missing key id and hour while any wait, to the operator's
 * destinations only (the keys are the operator's, not an application's).
 *
 * The event's id is `encryption-key-missing-<key id>-<hour>`: raising it again within the hour
 * changes nothing, so several pollers and every scan of the hour give one event.
 */
import type { Logger } from "pino";
import type { Database } from "./db/port.js";
import { UNSENT_PREFIX } from "./outbound/sql/deferUnsent.js";
import { raisePlatformEvent } from "./platformEvents.js";

export const ENCRYPTION_KEY_MISSING = "encryption_key.missing";
const WINDOW_SECONDS = 3600;

export interface EncryptionKeyMissingEvent {
  eventId: string;
  /** The key id the secrets are under; null when the message named none (no keys at all, an altered value). */
  keyId: string | null;
  /** Deliveries waiting for it now. */
  deliveriesWaiting: number;
  /** Subscriptions they belong to (at most 20 listed). */
  subscriptionIds: string[];
  /** The relay's words, from one of them. */
  detail: string;
}

/** One scan; returns the events this call raised. */
export async function scanMissingEncryptionKeys(db: Database, options: { logger?: Logger; maxPayloadBytes?: number; now?: Date } = {}): Promise<EncryptionKeyMissingEvent[]> {
  const { rows } = await db.query<{ key_id: string | null; n: string; subscription_ids: string[]; detail: string }>(
    `SELECT substring(last_error from 'key id "([^"]+)"') AS key_id, count(*)::text AS n,
            (array_agg(DISTINCT subscription_id))[1:20] AS subscription_ids, min(last_error) AS detail
     FROM outbound_deliveries
     WHERE status = 'pending' AND last_error LIKE $1
     GROUP BY 1`,
    [`${UNSENT_PREFIX}%`],
  );
  const hour = Math.floor((options.now ?? new Date()).getTime() / 1000 / WINDOW_SECONDS);
  const raised: EncryptionKeyMissingEvent[] = [];
  for (const row of rows) {
    const event: EncryptionKeyMissingEvent = {
      eventId: `encryption-key-missing-${row.key_id ?? "none"}-${hour}`,
      keyId: row.key_id, deliveriesWaiting: Number(row.n), subscriptionIds: row.subscription_ids, detail: row.detail.slice(UNSENT_PREFIX.length, UNSENT_PREFIX.length + 500),
    };
    const { eventId: id, ...data } = event;
    const created = await db.transaction((tx) => raisePlatformEvent(tx, { id, type: ENCRYPTION_KEY_MISSING, data }, { maxPayloadBytes: options.maxPayloadBytes }));
    if (created) {
      raised.push(event);
      options.logger?.error({ event: ENCRYPTION_KEY_MISSING, eventId: id, keyId: row.key_id, deliveriesWaiting: event.deliveriesWaiting }, `operational event ${ENCRYPTION_KEY_MISSING}`);
    }
  }
  return raised;
}
