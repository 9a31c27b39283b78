/**
 * Listeners (`webhooks listen`, docs/listen.md): a developer's machine receives a subscription's
 * deliveries without opening a port. It attaches a listener, pulls due deliveries through the
 * management API, each leased as a relay leases it and signed as the relay would sign it, forwards
 * them to its local receiver and answers with what that receiver said; the answer is the
 * attempt, retried and dead-lettered by the same rules, in the same attempt log.
 *
 * Sharing with the relays: while a listener is attached (heartbeats within its lease), the relays
 * leave the subscription alone (`listened_until`, migration 027, which their claim skips), so
 * every delivery goes to the listener; once it detaches, or vanishes and its lease passes, the
 * relays resume, and the deliveries it held come back when their leases end (at once on detach).
 * Two listeners of one subscription share its deliveries, each delivery going to one of them.
 */
import { randomUUID } from "node:crypto";
import type { Database, Queryable, Transaction } from "../db/port.js";
import { isUnreadableSecretError, openHeaders, openSecrets } from "../crypto/subscriptionSecrets.js";
import { decideNext } from "./decide.js";
import { NotFoundError, OutboundValidationError } from "./errors.js";
import { DEFAULT_HEALTH_POLICY } from "./health.js";
import { NOTIFY_CHANNEL } from "./notify.js";
import { parseRetryAfter, type RetryPolicy } from "./retryPolicy.js";
import { signatureHeader } from "./signature.js";
import { completeDeliveries } from "./sql/completeDeliveries.js";
import { deferUnsent, UNREADABLE_SECRET_RETRY_SECONDS } from "./sql/deferUnsent.js";
import { runTransformation, TransformationError, type TransformationLimits } from "./transformations.js";
import { classifyStatus, DEFAULT_USER_AGENT, type DeliveryOutcome } from "./transport.js";
import type { ClaimedDelivery, Completion } from "./types.js";

/** Lease of a listener's deliveries, and how long it lives without a heartbeat, by default (seconds). */
export const DEFAULT_LISTENER_LEASE_SECONDS = 30;
export const MIN_LISTENER_LEASE_SECONDS = 5;
export const MAX_LISTENER_LEASE_SECONDS = 300;
/** Most deliveries handed out by one pull, and held by one listener at once. */
export const MAX_LISTENER_BATCH = 20;
/** Response bytes of the local answer kept (as the relay keeps 1 KiB of an endpoint's). */
export const LISTENER_EXCERPT_BYTES = 1024;
/** Most response headers kept of a local answer, and most characters of each value. */
const MAX_RESPONSE_HEADERS = 30;
const MAX_HEADER_VALUE = 200;

export interface Listener {
  id: string;
  subscriptionId: string;
  forwardTo: string | null;
  leaseSeconds: number;
  createdAt: string;
  expiresAt: string;
}

/** Attached: the listener, the subscription as it is now, and how many other listeners share it. */
export interface AttachedListener extends Listener {
  subscription: { eventTypes: string[]; url: string; paused: boolean; status: string };
  otherListeners: number;
}

/** One delivery as a listener forwards it: the exact bytes and headers the relay would send. */
export interface ListenedDelivery {
  id: string;
  eventId: string;
  eventType: string;
  /** This attempt's number (1 for the first). */
  attempt: number;
  /** content-type, user-agent, webhook-id, webhook-timestamp, webhook-signature and the subscription's own headers. */
  headers: Record<string, string>;
  /** The body, as signed. */
  body: string;
}

/** What the local receiver answered, as the CLI reports it. */
export interface ListenerAnswer {
  deliveryId: string;
  /** The HTTP status, or null when no answer came (`error` says why). */
  status: number | null;
  /** Without a status: connection_refused, timeout, connection_reset, dns_failure, network_error. */
  error?: string | null;
  durationMs: number;
  /** The first bytes of the response body (cut to LISTENER_EXCERPT_BYTES). */
  responseExcerpt?: string | null;
  /** Response headers (an excerpt: LISTENER_EXCERPT_BYTES of each value, MAX_RESPONSE_HEADERS of them). */
  responseHeaders?: Record<string, string> | null;
}

export interface RecordedAnswer {
  deliveryId: string;
  /** delivered, retrying (pending, due again in `retryInSeconds`), dead, or stale (no longer this listener's: its lease ran out and it went elsewhere, or it was cancelled). */
  outcome: "delivered" | "retrying" | "dead" | "stale";
  retryInSeconds: number | null;
  deadReason: string | null;
}

/** The listener is gone: detached, or expired without a heartbeat (its deliveries went back). */
export class ListenerGoneError extends Error {
  override name = "ListenerGoneError";
  constructor(readonly listenerId: string) {
    super(`Listener ${listenerId} is no longer attached (detached, or no heartbeat within its lease); its deliveries went back to the subscription. Attach again.`);
  }
}

const LISTENER_COLUMNS = `id, subscription_id AS "subscriptionId", forward_to AS "forwardTo", lease_seconds AS "leaseSeconds",
  created_at AS "createdAt", expires_at AS "expiresAt"`;

/** Times as ISO 8601 in UTC, as every answer of the API gives them. */
const listenerOf = (row: Listener): Listener => ({ ...row, createdAt: new Date(row.createdAt).toISOString(), expiresAt: new Date(row.expiresAt).toISOString() });

/**
 * The subscription's `listened_until` set to the latest expiry of its live listeners (NULL when
 * none is left): the one thing the relays' claim looks at (sql/claimDeliveries.ts).
 */
const MARK_LISTENED = `UPDATE outbound_subscriptions s
   SET listened_until = (SELECT max(l.expires_at) FROM outbound_listeners l WHERE l.subscription_id = s.id AND l.expires_at > now())
   WHERE s.id = $1`;

/** Attaches a listener to a subscription (not deleted): from now until it detaches or expires, the relays leave it alone. */
export async function attachListener(
  db: Database,
  subscriptionId: string,
  options: { forwardTo?: string | null; leaseSeconds?: number; createdBy?: string } = {},
): Promise<AttachedListener> {
  const leaseSeconds = options.leaseSeconds ?? DEFAULT_LISTENER_LEASE_SECONDS;
  if (!Number.isInteger(leaseSeconds) || leaseSeconds < MIN_LISTENER_LEASE_SECONDS || leaseSeconds > MAX_LISTENER_LEASE_SECONDS) {
    const message = `must be an integer from ${MIN_LISTENER_LEASE_SECONDS} to ${MAX_LISTENER_LEASE_SECONDS}`;
    throw new OutboundValidationError(`leaseSeconds: ${message}.`, [{ path: "leaseSeconds", message }]);
  }
  return db.transaction(async (tx) => {
    const { rows: subs } = await tx.query<{ event_types: string[]; url: string; paused: boolean; status: string }>(
      `SELECT event_types, url, paused_at IS NOT NULL AS paused, status FROM outbound_subscriptions WHERE id = $1 AND deleted_at IS NULL FOR NO KEY UPDATE`,
      [subscriptionId],
    );
    const sub = subs[0];
    if (!sub) throw new NotFoundError("subscription", subscriptionId);
    await tx.query(`DELETE FROM outbound_listeners WHERE subscription_id = $1 AND expires_at < now() - interval '1 hour'`, [subscriptionId]);
    const { rows } = await tx.query<Listener>(
      `INSERT INTO outbound_listeners (id, subscription_id, forward_to, lease_seconds, created_by, expires_at)
       VALUES ($1::uuid, $2, $3, $4::int, $5, now() + $4::int * interval '1 second')
       RETURNING ${LISTENER_COLUMNS}`,
      [randomUUID(), subscriptionId, options.forwardTo ?? null, leaseSeconds, options.createdBy ?? null],
    );
    await tx.query(MARK_LISTENED, [subscriptionId]);
    const { rows: others } = await tx.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM outbound_listeners WHERE subscription_id = $1 AND expires_at > now() AND id <> $2`,
      [subscriptionId, rows[0]!.id],
    );
    return { ...listenerOf(rows[0]!), subscription: { eventTypes: sub.event_types, url: sub.url, paused: sub.paused, status: sub.status }, otherListeners: others[0]!.n };
  });
}

/**
 * The heartbeat: the listener lives another lease, and so do the leases of the deliveries it
 * still holds (`holding`, those it is forwarding). ListenerGoneError once it has expired: a
 * listener that missed its heartbeats does not come back (its deliveries may be elsewhere by now).
 */
export async function renewListener(db: Database, subscriptionId: string, listenerId: string, holding: readonly string[] = []): Promise<Listener> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<Listener>(
      `UPDATE outbound_listeners SET expires_at = now() + lease_seconds * interval '1 second'
       WHERE id = $1 AND subscription_id = $2 AND expires_at > now()
       RETURNING ${LISTENER_COLUMNS}`,
      [listenerId, subscriptionId],
    );
    const listener = rows[0];
    if (!listener) throw new ListenerGoneError(listenerId);
    await tx.query(MARK_LISTENED, [subscriptionId]);
    if (holding.length > 0) {
      await tx.query(
        `UPDATE outbound_deliveries SET lease_expires_at = now() + $3::int * interval '1 second'
         WHERE id = ANY ($1::text[]) AND lease_token = $2::uuid AND status = 'pending'`,
        [holding, listenerId, listener.leaseSeconds],
      );
    }
    return listenerOf(listener);
  });
}

/**
 * Detaches a listener: the deliveries it holds are released (due at once, not after their lease),
 * the relays resume if it was the last one, and are woken. Idempotent: false when it was gone.
 */
export async function detachListener(db: Database, subscriptionId: string, listenerId: string): Promise<{ detached: boolean; released: number }> {
  return db.transaction(async (tx) => {
    // The row lock first: a pull still running for this listener (it locks the row FOR SHARE) ends
    // before the release below, whose own snapshot then sees what that pull leased.
    const { rowCount } = await tx.query(`DELETE FROM outbound_listeners WHERE id = $1 AND subscription_id = $2`, [listenerId, subscriptionId]);
    if (!rowCount) await mustExist(tx, subscriptionId);
    const released = await tx.query(
      `UPDATE outbound_deliveries SET lease_token = NULL, lease_expires_at = NULL, updated_at = now()
       WHERE subscription_id = $1 AND status = 'pending' AND lease_token = $2::uuid`,
      [subscriptionId, listenerId],
    );
    await tx.query(MARK_LISTENED, [subscriptionId]);
    await tx.query("SELECT pg_notify($1, '')", [NOTIFY_CHANNEL]);
    return { detached: (rowCount ?? 0) > 0, released: released.rowCount ?? 0 };
  });
}

/** NotFoundError unless the subscription exists (deleted ones do not). */
async function mustExist(q: Queryable, subscriptionId: string): Promise<void> {
  const { rows } = await q.query(`SELECT 1 FROM outbound_subscriptions WHERE id = $1 AND deleted_at IS NULL`, [subscriptionId]);
  if (rows.length === 0) throw new NotFoundError("subscription", subscriptionId);
}

/** The listeners attached to a subscription now. */
export async function listListeners(q: Queryable, subscriptionId: string): Promise<Listener[]> {
  const { rows } = await q.query<Listener>(
    `SELECT ${LISTENER_COLUMNS} FROM outbound_listeners WHERE subscription_id = $1 AND expires_at > now() ORDER BY created_at, id`,
    [subscriptionId],
  );
  if (rows.length === 0) await mustExist(q, subscriptionId);
  return rows.map(listenerOf);
}

interface ListenerClaimRow {
  id: string;
  event_id: string;
  event_type: string;
  subscription_id: string;
  url: string;
  secrets: string[];
  body: string;
  attempts: number;
  max_attempts: number | null;
  headers: Record<string, string>;
  ordering_key: string | null;
  rate_limited_since: number | null;
  transformation: string | null;
}

/**
 * A relay's claim for one listener: the subscription's oldest due deliveries no live lease holds,
 * leased with the listener's id as token for its lease, while the listener is alive (its row
 * locked FOR SHARE, so a detach waits for this claim and then releases what it took) and the
 * subscription not paused. The headers are the relay's (sql/claimDeliveries.ts `load`: the
 * subscription's, the event's, its traceparent). Ordered subscriptions: only a key's head is due.
 */
const CLAIM_FOR_LISTENER = `WITH listener AS (
     SELECT l.id, l.subscription_id, l.lease_seconds
     FROM outbound_listeners l
     JOIN outbound_subscriptions s ON s.id = l.subscription_id
     WHERE l.id = $1::uuid AND l.subscription_id = $2 AND l.expires_at > now() AND s.paused_at IS NULL AND s.deleted_at IS NULL
     FOR SHARE OF l
   ),
   picked AS (
     SELECT d.id
     FROM outbound_deliveries d
     WHERE d.subscription_id = (SELECT subscription_id FROM listener) AND d.status = 'pending' AND d.next_attempt_at <= now()
       AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= now())
     ORDER BY d.next_attempt_at
     LIMIT $3
     FOR UPDATE OF d SKIP LOCKED
   ),
   claimed AS (
     UPDATE outbound_deliveries d
     SET lease_token = $1::uuid,
         lease_expires_at = now() + (SELECT lease_seconds FROM listener) * interval '1 second',
         claims = d.claims + 1,
         updated_at = now()
     WHERE d.id = ANY (ARRAY(SELECT id FROM picked))
     RETURNING d.id, d.event_id, d.subscription_id, d.attempts, d.ordering_key, d.rate_limited_since
   )
   SELECT c.id, c.event_id, e.type AS event_type, c.subscription_id, s.url, s.secrets, e.body, c.attempts, s.max_attempts,
          CASE WHEN e.traceparent IS NOT NULL AND s.send_traceparent
               THEN jsonb_build_object('traceparent', e.traceparent) || s.headers || COALESCE(e.headers, '{}'::jsonb)
               ELSE s.headers || COALESCE(e.headers, '{}'::jsonb) END AS headers,
          c.ordering_key, extract(epoch FROM c.rate_limited_since) * 1000 AS rate_limited_since, s.transformation
   FROM claimed c
   JOIN outbound_events e ON e.id = c.event_id
   JOIN outbound_subscriptions s ON s.id = c.subscription_id
   ORDER BY c.id`;

/**
 * Why a pull found nothing: nothing due (resolves), the listener gone (ListenerGoneError), or its
 * subscription deleted meanwhile (NotFoundError: listening again cannot help).
 */
async function mustBeListening(q: Queryable, subscriptionId: string, listenerId: string): Promise<void> {
  const { rows } = await q.query<{ alive: boolean; deleted: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM outbound_listeners WHERE id = $1::uuid AND subscription_id = $2 AND expires_at > now()) AS alive,
            NOT EXISTS (SELECT 1 FROM outbound_subscriptions WHERE id = $2 AND deleted_at IS NULL) AS deleted`,
    [listenerId, subscriptionId],
  );
  if (rows[0]!.deleted) throw new NotFoundError("subscription", subscriptionId);
  if (!rows[0]!.alive) throw new ListenerGoneError(listenerId);
}

function claimedOf(row: ListenerClaimRow, listenerId: string): ClaimedDelivery {
  return {
    id: row.id, eventId: row.event_id, subscriptionId: row.subscription_id, url: row.url, secrets: row.secrets, body: row.body,
    attempts: row.attempts, maxAttempts: row.max_attempts, headers: row.headers, transformation: row.transformation,
    leaseToken: listenerId, orderingKey: row.ordering_key, probe: false,
    rateLimitedSince: row.rate_limited_since === null ? null : Number(row.rate_limited_since),
  };
}

export interface ListenerPolicy {
  retry: RetryPolicy;
  transformationLimits?: TransformationLimits;
}

/**
 * Claims up to `limit` due deliveries for the listener and prepares each as the relay would send
 * it: the subscription's transformation run, the body signed with its secrets now (webhook-
 * timestamp is the claim's), its headers added. A delivery the transformation skips or fails is
 * completed here (as the relay completes it), one whose secrets cannot be decrypted is put back
 * as the relay puts it back; neither is handed out. ListenerGoneError when the listener is gone.
 */
export async function claimForListener(db: Database, subscriptionId: string, listenerId: string, limit: number, policy: ListenerPolicy): Promise<ListenedDelivery[]> {
  const n = Math.max(1, Math.min(MAX_LISTENER_BATCH, Math.floor(limit)));
  const { rows } = await db.query<ListenerClaimRow>(CLAIM_FOR_LISTENER, [listenerId, subscriptionId, n]);
  if (rows.length === 0) {
    await mustBeListening(db, subscriptionId, listenerId);
    return [];
  }
  const out: ListenedDelivery[] = [];
  const finished: Completion[] = [];
  for (const row of rows) {
    const delivery = claimedOf(row, listenerId);
    let secrets: string[];
    let headers: Record<string, string>;
    try {
      secrets = openSecrets(delivery.subscriptionId, delivery.secrets);
      headers = openHeaders(delivery.subscriptionId, delivery.headers);
    } catch (error) {
      if (!isUnreadableSecretError(error)) throw error;
      await deferUnsent(db, delivery, `${(error as Error).message} Not handed to the listener and not counted; tried again every ${UNREADABLE_SECRET_RETRY_SECONDS} s.`);
      continue;
    }
    let body = delivery.body;
    if (delivery.transformation) {
      const started = Date.now();
      const no = (result: DeliveryOutcome["result"], errorClass: string, excerpt: string): Completion => {
        const outcome: DeliveryOutcome = { result, status: null, latencyMs: Date.now() - started, errorClass, responseExcerpt: excerpt, retryAfterSeconds: null };
        return { delivery, outcome, decision: decideNext(delivery, outcome, policy.retry) };
      };
      try {
        const result = await runTransformation(delivery.transformation, JSON.parse(delivery.body), policy.transformationLimits);
        if (result.skip) {
          finished.push(no("delivered", "skipped_by_transformation", "not sent: the subscription's transformation returned null for this event"));
          continue;
        }
        // Its `url` is the endpoint's business: a listener forwards to its own receiver.
        body = result.body;
        if (result.headers) headers = { ...headers, ...result.headers };
      } catch (error) {
        if (!(error instanceof TransformationError)) throw error;
        finished.push(no("permanent", "transformation_failed", error.message));
        continue;
      }
    }
    const timestamp = Math.floor(Date.now() / 1000);
    out.push({
      id: delivery.id, eventId: delivery.eventId, eventType: row.event_type, attempt: delivery.attempts + 1, body,
      headers: {
        ...headers,
        "content-type": "application/json",
        "user-agent": DEFAULT_USER_AGENT,
        "webhook-id": delivery.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signatureHeader(secrets, delivery.id, timestamp, body),
      },
    });
  }
  if (finished.length > 0) await completeDeliveries(db, finished, DEFAULT_HEALTH_POLICY, { endpointHealth: false });
  return out;
}

interface HeldRow {
  id: string;
  event_id: string;
  subscription_id: string;
  attempts: number;
  max_attempts: number | null;
  ordering_key: string | null;
  rate_limited_since: number | null;
}

/** The local answer as the relay would have classified the endpoint's. */
function outcomeOf(answer: ListenerAnswer): DeliveryOutcome {
  const excerpt = answer.responseExcerpt == null ? null : answer.responseExcerpt.slice(0, LISTENER_EXCERPT_BYTES);
  const latencyMs = Math.max(0, Math.round(answer.durationMs));
  if (answer.status === null) {
    return { result: "retryable", status: null, latencyMs, errorClass: answer.error ?? "network_error", responseExcerpt: null, retryAfterSeconds: null };
  }
  const retryAfter = Object.entries(answer.responseHeaders ?? {}).find(([name]) => name.toLowerCase() === "retry-after")?.[1];
  const ok = answer.status >= 200 && answer.status < 300;
  return {
    result: classifyStatus(answer.status), status: answer.status, latencyMs,
    errorClass: ok ? null : answer.status >= 300 && answer.status < 400 ? "redirect_refused" : "http_status",
    responseExcerpt: excerpt, retryAfterSeconds: parseRetryAfter(retryAfter),
  };
}

/** The kept excerpt of the local answer's headers: lower-case names, values cut, at most MAX_RESPONSE_HEADERS. */
function headersExcerpt(headers: Record<string, string> | null | undefined): Record<string, string> | null {
  if (!headers) return null;
  return Object.fromEntries(Object.entries(headers).slice(0, MAX_RESPONSE_HEADERS).map(([k, v]) => [k.toLowerCase(), String(v).slice(0, MAX_HEADER_VALUE)]));
}

/**
 * Records the local answers as the deliveries' attempts, in one transaction: the same decision
 * as the relay's (delivered; retried with the backoff, Retry-After honoured; dead when permanent
 * or exhausted), the same attempt log (marked with the listener and the response headers), but
 * none of the endpoint's health: the endpoint was not asked. An answer for a delivery this
 * listener no longer holds (its lease ran out and it went elsewhere) is logged as a stale attempt
 * and changes nothing, as a relay's late completion. An answer for a delivery never leased to it
 * is refused (a 400 naming it).
 */
export async function recordListenerAnswers(db: Database, subscriptionId: string, listenerId: string, answers: readonly ListenerAnswer[], policy: ListenerPolicy): Promise<RecordedAnswer[]> {
  if (answers.length === 0) return [];
  const ids = answers.map((a) => a.deliveryId);
  if (new Set(ids).size !== ids.length) {
    throw new OutboundValidationError("answers: names a delivery twice; answer each delivery once.", [{ path: "answers", message: "names a delivery twice; answer each delivery once" }]);
  }
  return db.transaction(async (tx: Transaction) => {
    const { rows } = await tx.query<HeldRow & { held: boolean }>(
      `SELECT d.id, d.event_id, d.subscription_id, d.attempts, s.max_attempts, d.ordering_key,
              extract(epoch FROM d.rate_limited_since) * 1000 AS rate_limited_since,
              d.lease_token = $2::uuid AND d.status = 'pending' AS held
       FROM outbound_deliveries d JOIN outbound_subscriptions s ON s.id = d.subscription_id
       WHERE d.id = ANY ($1::text[]) AND d.subscription_id = $3`,
      [ids, listenerId, subscriptionId],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    const unknown = ids.filter((id) => !byId.has(id));
    if (unknown.length > 0) {
      const issues = unknown.map((id) => ({ path: `answers[${ids.indexOf(id)}].deliveryId`, message: `no delivery ${JSON.stringify(id)} of this subscription` }));
      throw new OutboundValidationError(`${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}.`, issues);
    }
    const completions: Completion[] = answers.map((answer) => {
      const row = byId.get(answer.deliveryId)!;
      const delivery: ClaimedDelivery = {
        id: row.id, eventId: row.event_id, subscriptionId: row.subscription_id, url: "", secrets: [], body: "",
        attempts: row.attempts, maxAttempts: row.max_attempts, leaseToken: listenerId, orderingKey: row.ordering_key, probe: false,
        rateLimitedSince: row.rate_limited_since === null ? null : Number(row.rate_limited_since),
      };
      const outcome = outcomeOf(answer);
      return { delivery, outcome, decision: decideNext(delivery, outcome, policy.retry) };
    });
    const result = await completeDeliveries(tx, completions, DEFAULT_HEALTH_POLICY, { endpointHealth: false, inlineFirstAttempts: false });
    // The attempts just logged (this transaction's: created_at is its now()) are the listener's.
    await tx.query(
      `UPDATE outbound_attempt_rows a SET listener_id = $1::uuid, response_headers = h.headers::jsonb
       FROM unnest($2::text[], $3::text[]) AS h(delivery_id, headers)
       WHERE a.delivery_id = h.delivery_id AND a.created_at = now()`,
      [listenerId, ids, answers.map((a) => { const h = headersExcerpt(a.responseHeaders); return h ? JSON.stringify(h) : null; })],
    );
    const applied = new Set(result.accepted);
    return completions.map(({ delivery, decision }): RecordedAnswer => {
      if (!applied.has(delivery.id)) return { deliveryId: delivery.id, outcome: "stale", retryInSeconds: null, deadReason: null };
      if (decision.status === "pending") return { deliveryId: delivery.id, outcome: "retrying", retryInSeconds: decision.delaySeconds, deadReason: null };
      return { deliveryId: delivery.id, outcome: decision.status, retryInSeconds: null, deadReason: decision.deadReason };
    });
  });
}
