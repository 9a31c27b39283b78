/**
 * `delivery.exhausted` operational events (issue 29): a delivery became a dead letter. Raised as an
 * event of the platform (shared/platformEvents.ts): to the operator's destinations, and to the dead
 * letter's own application's subscriptions naming it (`delivery.*`, `delivery.exhausted`), never
 * another application's.
 *
 * Debounced per subscription: a burst of dead letters from one endpoint gives one event per window
 * (default 300 s) with their `count`, not one per dead letter. The first dead letter of a quiet
 * subscription is announced at the next scan; those dying within the window after an event wait
 * until it has passed, and are then announced together by one event. Every dead letter is counted
 * by exactly one event (migration 024's `outbound_delivery_exhaustions` marks which).
 *
 * No loops: a dead letter of one of the platform's own events (an event of `app_platform`, or an
 * application's copy of one) raises nothing here, so a `delivery.exhausted` whose own delivery dies
 * never announces itself. Such dead letters are still listed in `/dead-letters` and logged.
 *
 * Run by the alert poller; one scanner at a time (a transaction-level advisory lock: another
 * scanner skips its turn), the event raised and its dead letters marked in one transaction.
 */
import type { Logger } from "pino";
import type { Database } from "./db/port.js";
import { raisePlatformEvent } from "./platformEvents.js";
import { PLATFORM_APPLICATION_ID } from "./tenancy/defaults.js";

export const DELIVERY_EXHAUSTED = "delivery.exhausted";
const DEFAULT_DEBOUNCE_SECONDS = 300;
/** Most delivery ids an event names (its `count` counts them all). */
export const MAX_DELIVERY_IDS = 20;
/** A lock id only this module uses. */
const SCAN_LOCK = 7_310_420_124;

export interface DeliveryExhaustedEvent {
  eventId: string;
  subscriptionId: string;
  applicationId: string;
  url: string;
  /** Dead letters this event announces. */
  count: number;
  /** The first MAX_DELIVERY_IDS of them, oldest first. */
  deliveryIds: string[];
  /** The newest one's reason. */
  reason: string | null;
  firstDeadAt: string;
  lastDeadAt: string;
}

export interface ExhaustedScanOptions {
  logger?: Logger;
  /** Seconds after an event of a subscription within which its new dead letters wait. Default: 300. */
  debounceSeconds?: number;
  /** Only dead letters this recent are recorded (the alert scan's look-back). Default: 168. */
  lookbackHours?: number;
  /** Most new dead letters recorded per scan (the rest at the next). Default: 1000. */
  limit?: number;
  maxPayloadBytes?: number;
}

interface WaitingRow { id: string; delivery_id: string; subscription_id: string; application_id: string; reason: string | null; dead_at: Date | string; url: string | null }

/** One scan: records new dead letters and raises the events due; returns those raised. */
export async function scanDeliveryExhaustions(db: Database, options: ExhaustedScanOptions = {}): Promise<DeliveryExhaustedEvent[]> {
  const debounce = options.debounceSeconds ?? DEFAULT_DEBOUNCE_SECONDS;
  return db.transaction(async (tx) => {
    const { rows: [lock] } = await tx.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock($1) AS ok", [SCAN_LOCK]);
    if (!lock?.ok) return [];
    // New dead letters, except those of the platform's own events (its events, and applications' copies of them).
    await tx.query(
      `INSERT INTO outbound_delivery_exhaustions (delivery_id, replays, subscription_id, application_id, reason, dead_at)
       SELECT d.id, d.replays, d.subscription_id, e.application_id, d.dead_reason, d.dead_at
       FROM outbound_deliveries d
       JOIN outbound_events e ON e.id = d.event_id
       WHERE d.status = 'dead'
         AND d.dead_at > now() - make_interval(hours => $1::int)
         AND e.application_id <> $2
         AND NOT EXISTS (
           SELECT 1 FROM outbound_events p
           WHERE p.application_id = $2 AND p.type = e.type
             AND p.id = left(e.id, length(e.id) - length(e.application_id) - 1)
             AND right(e.id, length(e.application_id) + 1) = '.' || e.application_id)
         -- Those recorded already are skipped here rather than by the conflict: each scan would
         -- otherwise re-insert every dead letter of the look-back.
         AND NOT EXISTS (SELECT 1 FROM outbound_delivery_exhaustions x WHERE x.delivery_id = d.id AND x.replays = d.replays)
       ORDER BY d.dead_at, d.id
       LIMIT $3
       ON CONFLICT (delivery_id, replays) DO NOTHING`,
      [options.lookbackHours ?? 168, PLATFORM_APPLICATION_ID, options.limit ?? 1000],
    );
    // Waiting dead letters of subscriptions with no event in the last window.
    const { rows } = await tx.query<WaitingRow>(
      `SELECT x.id::text AS id, x.delivery_id, x.subscription_id, x.application_id, x.reason, x.dead_at, s.url
       FROM outbound_delivery_exhaustions x
       LEFT JOIN outbound_subscriptions s ON s.id = x.subscription_id
       WHERE x.event_id IS NULL
         AND NOT EXISTS (
           SELECT 1 FROM outbound_delivery_exhaustions r
           WHERE r.subscription_id = x.subscription_id AND r.event_id IS NOT NULL
             AND r.raised_at > now() - make_interval(secs => $1::float8))
       ORDER BY x.subscription_id, x.dead_at, x.id`,
      [debounce],
    );
    const bySubscription = new Map<string, WaitingRow[]>();
    for (const row of rows) bySubscription.set(row.subscription_id, [...(bySubscription.get(row.subscription_id) ?? []), row]);
    const raised: DeliveryExhaustedEvent[] = [];
    for (const [subscriptionId, group] of bySubscription) {
      const first = group[0]!;
      const last = group[group.length - 1]!;
      const event: DeliveryExhaustedEvent = {
        // Named by its first dead letter's row: stable, so raising it again changes nothing.
        eventId: `delivery-exhausted-${first.id}`,
        subscriptionId, applicationId: first.application_id, url: first.url ?? "",
        count: group.length,
        deliveryIds: group.slice(0, MAX_DELIVERY_IDS).map((r) => r.delivery_id),
        reason: last.reason,
        firstDeadAt: new Date(first.dead_at).toISOString(),
        lastDeadAt: new Date(last.dead_at).toISOString(),
      };
      const { eventId: id, ...data } = event;
      await raisePlatformEvent(tx, { id, type: DELIVERY_EXHAUSTED, data, applicationId: first.application_id }, { maxPayloadBytes: options.maxPayloadBytes });
      await tx.query("UPDATE outbound_delivery_exhaustions SET event_id = $2, raised_at = now() WHERE id = ANY($1::bigint[])", [group.map((r) => r.id), id]);
      raised.push(event);
      options.logger?.warn({ event: DELIVERY_EXHAUSTED, eventId: id, subscriptionId, applicationId: first.application_id, count: group.length, reason: last.reason }, `operational event ${DELIVERY_EXHAUSTED}`);
    }
    return raised;
  });
}
