/**
 * The alert hook: every new dead letter (outbound) and quarantined inbox entry (inbound) becomes
 * an `alert.dead_letter` / `alert.inbox_quarantined` event in our own outbox, delivered signed to
 * the system subscription for ALERT_WEBHOOK_URL (and to any other subscription of the platform's
 * own application, `app_platform`, matching it), and is logged at error level. A dead letter of
 * an application's subscription also reaches that application's subscriptions naming `alert.*`
 * or `alert.dead_letter` (not `*`), never another application's (shared/platformEvents.ts).
 *
 * Why a poller rather than a call inside each dead-lettering transaction: the poller reads the
 * durable state (`status = 'dead'`, `status = 'quarantined'`), so it covers every path that can
 * dead-letter (relay, processor, cloud functions sharing the database, paths added later) without
 * any of them having to remember to call it. Each alert's event id is derived from the entry and
 * its replay count, and `enqueue` is idempotent by event id, so a crash between scan and enqueue,
 * or several pollers on one database, never loses an alert nor sends one twice. The event row is
 * also the "already alerted" marker: no extra table. The cost is latency (one poll interval,
 * 5 s by default); an entry replayed and fixed before the next poll raises no alert.
 *
 * Alerts about alert deliveries are never raised (that would loop while the alert URL is down),
 * nor about the deliveries of `delivery.exhausted` and `inbox.quarantined`; such a dead letter is
 * still logged at error level by the relay and listed in `/dead-letters`.
 *
 * Each dead letter also counts towards a `delivery.exhausted` operational event (debounced per
 * subscription, shared/deliveryExhaustedEvents.ts), and each quarantined entry raises an
 * `inbox.quarantined` beside its alert, with the same data: the alerts are unchanged, so receivers
 * written for `alert.*` keep working.
 */
import { MIN_RETENTION_DAYS } from "./retention/policy.js";
import { runPeriodically } from "./periodic.js";
import type { Logger } from "pino";
import type { Database, Queryable } from "./db/port.js";
import { createSubscription } from "./outbound/index.js";
import { raisePlatformEvent } from "./platformEvents.js";
import { scanHealthTransitions } from "./operationalEvents.js";
import { scanAuthFailures } from "./authEvents.js";
import { scanMissingEncryptionKeys } from "./encryptionKeyEvents.js";
import { scanDeliveryExhaustions } from "./deliveryExhaustedEvents.js";
import { PLATFORM_APPLICATION_ID } from "./tenancy/defaults.js";
import { openSecrets, sealSecrets } from "./crypto/subscriptionSecrets.js";
import type { BackgroundWorker, PlatformContext } from "./context.js";
import { recordAlert, recordDeadLetter, SPANS, withSpan } from "./telemetry/telemetry.js";

export const ALERT_TYPES = { deadLetter: "alert.dead_letter", inboxQuarantined: "alert.inbox_quarantined" } as const;

/**
 * The operational event raised beside each `alert.inbox_quarantined`, with the same data, to the
 * operator only (inbox entries belong to no application). Kept beside the alert, which still goes
 * out unchanged, so receivers written for `alert.*` keep working.
 */
export const INBOX_QUARANTINED = "inbox.quarantined";

/** What the operator's alert subscription receives: alerts and operational events (shared/operationalEvents.ts, shared/authEvents.ts, shared/deliveryExhaustedEvents.ts). */
export const OPERATOR_EVENT_PATTERNS = ["alert.*", "endpoint.*", "auth.*", "encryption_key.*", "delivery.*", "inbox.*"];

/** Marks the system subscription that carries alerts to ALERT_WEBHOOK_URL. */
export const ALERT_SUBSCRIPTION_DESCRIPTION = "system: alerts to ALERT_WEBHOOK_URL";

/** Serialises `ensureAlertSubscription` across processes (a lock id only this module uses). */
const ALERT_SUBSCRIPTION_LOCK = 7_310_420_118;

export interface DeadLetterAlert {
  type: typeof ALERT_TYPES.deadLetter;
  deliveryId: string;
  subscriptionId: string;
  eventId: string;
  eventType: string;
  attempts: number;
  reason: string | null;
  deadAt: string;
}

export interface QuarantineAlert {
  type: typeof ALERT_TYPES.inboxQuarantined;
  entryId: string;
  partner: string;
  partnerEventId: string;
  eventType: string | null;
  reason: string | null;
}

export type Alert = DeadLetterAlert | QuarantineAlert;

/**
 * Creates (or points at `url`) the system subscription receiving `alert.*`, in the platform's own
 * application (operator-only). Returns its id. Safe to call on every start and from several
 * processes at once. A tenant's subscription with the same description is not it.
 */
export async function ensureAlertSubscription(db: Database, url: string, secret?: string): Promise<string> {
  return db.transaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock($1)", [ALERT_SUBSCRIPTION_LOCK]);
    const { rows } = await tx.query<{ id: string; url: string; secrets: string[]; event_types: string[] }>(
      "SELECT id, url, secrets, event_types FROM outbound_subscriptions WHERE description = $1 AND application_id = $2 ORDER BY created_at LIMIT 1",
      [ALERT_SUBSCRIPTION_DESCRIPTION, PLATFORM_APPLICATION_ID],
    );
    const existing = rows[0];
    if (!existing) {
      const sub = await createSubscription(tx, { url, eventTypes: OPERATOR_EVENT_PATTERNS, description: ALERT_SUBSCRIPTION_DESCRIPTION, applicationId: PLATFORM_APPLICATION_ID, ...(secret ? { secrets: [secret] } : {}) });
      return sub.id;
    }
    // The configuration wins: a changed URL or secret applies from the next alert on.
    // Secrets are stored encrypted (shared/crypto/subscriptionSecrets.ts): compared in clear, written sealed.
    const current = secret === undefined ? [] : openSecrets(existing.id, existing.secrets);
    // Its event types follow the release (a subscription made before operational events gets them).
    const typesChanged = existing.event_types.join(" ") !== OPERATOR_EVENT_PATTERNS.join(" ");
    if (existing.url !== url || typesChanged || (secret !== undefined && !(current.length === 1 && current[0] === secret))) {
      await tx.query(
        "UPDATE outbound_subscriptions SET url = $2, secrets = coalesce($3::text[], secrets), event_types = $4::text[], updated_at = now() WHERE id = $1",
        [existing.id, url, secret ? sealSecrets(existing.id, [secret]) : null, OPERATOR_EVENT_PATTERNS],
      );
    }
    return existing.id;
  });
}

interface DeadRow { id: string; subscription_id: string; application_id: string; event_id: string; event_type: string; attempts: number; dead_reason: string | null; dead_at: Date | string; alert_id: string }
interface QuarantineRow { id: string; partner_name: string; partner_event_id: string; event_type: string | null; quarantine_reason: string | null; alert_id: string }

/** Dead letters not yet alerted (the alert event id does not exist yet), oldest first. */
async function unalertedDeadLetters(q: Queryable, lookbackHours: number, limit: number): Promise<DeadRow[]> {
  const { rows } = await q.query<DeadRow>(
    `SELECT d.id, d.subscription_id, s.application_id, d.event_id, e.type AS event_type, d.attempts, d.dead_reason, d.dead_at, a.alert_id
     FROM outbound_deliveries d
     JOIN outbound_events e ON e.id = d.event_id
     JOIN outbound_subscriptions s ON s.id = d.subscription_id
     CROSS JOIN LATERAL (SELECT 'alert-dl-' || md5(d.id) || '-' || d.replays AS alert_id) a
     WHERE d.status = 'dead'
       AND d.dead_at > now() - make_interval(hours => $1::int)
       AND NOT starts_with(e.type, 'alert.')
       -- Nor about the platform's delivery.exhausted / inbox.quarantined (theirs, or an application's copy):
       -- a broken alert URL would otherwise get an alert for each of them that dies.
       AND NOT (e.type IN ('delivery.exhausted', 'inbox.quarantined') AND (e.application_id = 'app_platform' OR starts_with(e.id, 'delivery-exhausted-')))
       AND NOT EXISTS (SELECT 1 FROM outbound_events x WHERE x.id = a.alert_id)
     ORDER BY d.dead_at, d.id
     LIMIT $2`,
    [lookbackHours, limit],
  );
  return rows;
}

/** Quarantined inbox entries not yet alerted, oldest first. */
async function unalertedQuarantine(q: Queryable, lookbackHours: number, limit: number): Promise<QuarantineRow[]> {
  const { rows } = await q.query<QuarantineRow>(
    `SELECT i.id::text AS id, i.partner_name, i.partner_event_id, i.event_type, i.quarantine_reason, a.alert_id
     FROM inbox_entries i
     CROSS JOIN LATERAL (SELECT 'alert-q-' || i.id::text || '-' || i.replays AS alert_id) a
     WHERE i.status = 'quarantined'
       AND coalesce(i.processed_at, i.received_at) > now() - make_interval(hours => $1::int)
       AND NOT EXISTS (SELECT 1 FROM outbound_events x WHERE x.id = a.alert_id)
     ORDER BY coalesce(i.processed_at, i.received_at), i.id
     LIMIT $2`,
    [lookbackHours, limit],
  );
  return rows;
}

/** How far back a scan looks: less than the shortest retention, whose alert events prove an announcement. */
export const MAX_LOOKBACK_HOURS = (MIN_RETENTION_DAYS - 1) * 24;

/** The look-back in whole hours, 1 to MAX_LOOKBACK_HOURS (default: the most); throws RangeError otherwise. */
function checkedLookback(hours: number | undefined): number {
  const lookback = hours ?? MAX_LOOKBACK_HOURS;
  if (!Number.isInteger(lookback) || lookback < 1 || lookback > MAX_LOOKBACK_HOURS) {
    throw new RangeError(`lookbackHours must be a whole number from 1 to ${MAX_LOOKBACK_HOURS} (retention keeps alert events ${MIN_RETENTION_DAYS} days at least); got ${lookback}`);
  }
  return lookback;
}

export interface ScanOptions {
  logger?: Logger;
  /**
   * Only entries dead-lettered or quarantined this recently raise an alert. Default and most:
   * 168 (7 days). The alert event marks an entry as announced, and retention may purge it after
   * MIN_RETENTION_DAYS: a longer look back would announce purged alerts' entries again.
   */
  lookbackHours?: number;
  /** Most alerts raised per scan and direction. Default: 100. */
  limit?: number;
  /** Largest alert body. Default: the outbox default. */
  maxPayloadBytes?: number;
}

/**
 * One scan: raises an alert for each new dead letter and quarantined entry. Returns the alerts
 * this call created (an alert another scanner created first is not returned).
 */
export async function scanForAlerts(db: Database, options: ScanOptions = {}): Promise<Alert[]> {
  const lookback = checkedLookback(options.lookbackHours);
  const limit = options.limit ?? 100;
  return withSpan(SPANS.alertScan, {}, async (span) => {
    const raised: Alert[] = [];
    for (const row of await unalertedDeadLetters(db, lookback, limit)) {
      const alert: DeadLetterAlert = {
        type: ALERT_TYPES.deadLetter,
        deliveryId: row.id,
        subscriptionId: row.subscription_id,
        eventId: row.event_id,
        eventType: row.event_type,
        attempts: row.attempts,
        reason: row.dead_reason,
        deadAt: new Date(row.dead_at).toISOString(),
      };
      if (await raise(db, row.alert_id, alert, options, row.application_id)) {
        recordDeadLetter("outbound");
        raised.push(alert);
      }
    }
    for (const row of await unalertedQuarantine(db, lookback, limit)) {
      const alert: QuarantineAlert = {
        type: ALERT_TYPES.inboxQuarantined,
        entryId: row.id,
        partner: row.partner_name,
        partnerEventId: row.partner_event_id,
        eventType: row.event_type,
        reason: row.quarantine_reason,
      };
      if (await raise(db, row.alert_id, alert, options)) {
        recordDeadLetter("inbound");
        raised.push(alert);
      }
    }
    // Endpoint health changes (operational events), by the same poller on every host.
    await scanHealthTransitions(db, { logger: options.logger, maxPayloadBytes: options.maxPayloadBytes });
    // Endpoint credentials failing (auth.failing, shared/authEvents.ts).
    await scanAuthFailures(db, { logger: options.logger, maxPayloadBytes: options.maxPayloadBytes });
    // Deliveries waiting for a key ENCRYPTION_KEYS lacks (encryption_key.missing, shared/encryptionKeyEvents.ts).
    await scanMissingEncryptionKeys(db, { logger: options.logger, maxPayloadBytes: options.maxPayloadBytes });
    // Dead letters as delivery.exhausted, debounced per subscription (shared/deliveryExhaustedEvents.ts).
    await scanDeliveryExhaustions(db, { logger: options.logger, lookbackHours: lookback, maxPayloadBytes: options.maxPayloadBytes });
    span.setAttribute("webhooks.alerts.raised", raised.length);
    return raised;
  });
}

/**
 * Enqueues one alert for the operator (and, with `applicationId`, its copy for that application);
 * true when this call created it. Logs it at error level. Another scanner that raced us with a
 * reason that changed in between made it already: not created here.
 */
async function raise(db: Database, eventId: string, alert: Alert, options: ScanOptions, applicationId?: string): Promise<boolean> {
  const { type, ...data } = alert;
  const created = await db.transaction(async (tx) => {
    const made = await raisePlatformEvent(tx, { id: eventId, type, data, applicationId }, { maxPayloadBytes: options.maxPayloadBytes });
    // Its operational event, in the same transaction (the alert's event marks both as raised):
    // `inbox-quarantined-<entry id>-<replays>`, the operator's alone.
    if (made && alert.type === ALERT_TYPES.inboxQuarantined) {
      await raisePlatformEvent(tx, { id: eventId.replace(/^alert-q-/, "inbox-quarantined-"), type: INBOX_QUARANTINED, data }, { maxPayloadBytes: options.maxPayloadBytes });
    }
    return made;
  });
  if (!created) return false;
  recordAlert(type);
  if (alert.type === ALERT_TYPES.deadLetter) {
    options.logger?.error(
      { alert: type, alertEventId: eventId, deliveryId: alert.deliveryId, subscriptionId: alert.subscriptionId, eventType: alert.eventType, attempts: alert.attempts, reason: alert.reason },
      "delivery dead-lettered: it will not be retried automatically; replay it after fixing the endpoint",
    );
  } else {
    options.logger?.error(
      { alert: type, alertEventId: eventId, inboxEntryId: alert.entryId, partner: alert.partner, partnerEventId: alert.partnerEventId, eventType: alert.eventType, reason: alert.reason },
      "inbox entry quarantined: it will not be retried automatically; replay it after fixing the cause",
    );
  }
  return true;
}

export interface AlertWorkerOptions extends ScanOptions {
  /** Time between scans. Default: 5000 ms. */
  intervalMs?: number;
}

/**
 * Starts the alert poller (and, with ALERT_WEBHOOK_URL set, makes sure the system subscription
 * exists first). A failed scan is logged and retried at the next interval.
 */
export function startAlertWorker(ctx: PlatformContext, options: AlertWorkerOptions = {}): BackgroundWorker {
  const logger = options.logger ?? ctx.logger.child({ worker: "alerts" });
  const intervalMs = options.intervalMs ?? 5000;
  checkedLookback(options.lookbackHours); // a bad value stops the start, not every scan
  const scan: ScanOptions = { ...options, logger, maxPayloadBytes: options.maxPayloadBytes ?? ctx.config.MAX_PAYLOAD_BYTES };
  let ready = false;

  return runPeriodically("alerts", async () => {
    if (!ready) {
      if (ctx.config.ALERT_WEBHOOK_URL) {
        const id = await ensureAlertSubscription(ctx.db, ctx.config.ALERT_WEBHOOK_URL, ctx.config.ALERT_WEBHOOK_SECRET);
        logger.info({ subscriptionId: id }, "alerts are delivered through the system subscription for ALERT_WEBHOOK_URL");
      } else {
        logger.info("ALERT_WEBHOOK_URL is not set: alerts are logged and enqueued as alert.* events, with no system subscription");
      }
      ready = true;
    }
    await scanForAlerts(ctx.db, scan);
  }, {
    intervalMs,
    onError: (error) => logger.warn({ err: { type: (error as Error)?.name, message: (error as Error)?.message } }, "alert scan failed; retrying at the next interval"),
  });
}
