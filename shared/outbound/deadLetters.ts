/**
 * Dead letters: deliveries that will not be retried automatically. Listed, inspected (with the
 * event body and every attempt), and replayed one by one or in bulk. A replay puts the delivery
 * back on the normal path (pending, due now, attempt count restarted) and is recorded.
 */
import type { Database, Queryable } from "../db/port.js";
import { DELIVERY_COLUMNS, listAttempts, type Attempt, type Delivery } from "./deliveries.js";
import { NotADeadLetterError, NotFoundError, OutboundValidationError } from "./errors.js";
import { NOTIFY_CHANNEL } from "./notify.js";
import { lockKeysOfDeadLetters } from "./ordering.js";

export interface DeadLetterFilter {
  subscriptionId?: string;
  eventType?: string;
  /** Only dead letters whose reason starts with this (e.g. `exhausted`, `permanent`). */
  reasonPrefix?: string;
  /** Only those that died at or after this instant. */
  deadSince?: Date;
  /** Only those that died before this instant. */
  deadBefore?: Date;
  /** Only this application's. */
  applicationId?: string;
}

export interface DeadLetter extends Delivery {
  /** The exact body that was sent (and will be sent again on replay). */
  body: string;
  attemptLog: Attempt[];
  replayHistory: { previousReason: string | null; requestedBy: string | null; createdAt: Date }[];
}

/** The dead letters a filter selects, over `d` (deliveries) and `e` (their events); $1–$6 are `filterParams`. */
const MATCHING = `d.status = 'dead'
       AND ($1::text IS NULL OR d.subscription_id = $1)
       AND ($2::text IS NULL OR e.type = $2)
       AND ($3::text IS NULL OR starts_with(d.dead_reason, $3))
       AND ($4::timestamptz IS NULL OR d.dead_at >= $4)
       AND ($5::timestamptz IS NULL OR d.dead_at < $5)
       AND ($6::text IS NULL OR e.application_id = $6)`;

const filterParams = (f: DeadLetterFilter) =>
  [f.subscriptionId ?? null, f.eventType ?? null, f.reasonPrefix ?? null, f.deadSince ?? null, f.deadBefore ?? null, f.applicationId ?? null];

/** Dead letters matching `filter`, in id order (pages with `after` = the last id of the previous page). */
export async function listDeadLetters(
  q: Queryable,
  filter: DeadLetterFilter & { limit?: number; after?: string } = {},
): Promise<Delivery[]> {
  const { rows } = await q.query<Delivery>(
    `SELECT ${DELIVERY_COLUMNS}
     FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id
     WHERE ${MATCHING}
       AND ($7::text IS NULL OR d.id > $7)
     ORDER BY d.id
     LIMIT $8`,
    [...filterParams(filter), filter.after ?? null, filter.limit ?? 100],
  );
  return rows;
}

/** How many dead letters match `filter` (the admin page's count, beyond the page it shows). */
export async function countDeadLetters(q: Queryable, filter: DeadLetterFilter = {}): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id WHERE ${MATCHING}`,
    filterParams(filter),
  );
  return rows[0]?.n ?? 0;
}

/** A dead letter with its body, attempts and replay history; NotFoundError if it is not dead. */
export async function getDeadLetter(q: Queryable, id: string): Promise<DeadLetter> {
  const { rows } = await q.query<Delivery & { body: string }>(
    `SELECT ${DELIVERY_COLUMNS}, e.body
     FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id
     WHERE d.id = $1 AND d.status = 'dead'`,
    [id],
  );
  if (!rows[0]) throw new NotFoundError("dead letter", id);
  const history = await q.query<DeadLetter["replayHistory"][number]>(
    `SELECT previous_reason AS "previousReason", requested_by AS "requestedBy", created_at AS "createdAt"
     FROM outbound_replays WHERE delivery_id = $1 ORDER BY id`,
    [id],
  );
  return { ...rows[0], attemptLog: await listAttempts(q, id), replayHistory: history.rows };
}

/**
 * Replays the given dead letters: each becomes pending and due now, its attempt count restarts,
 * and a replay record keeps the reason it died. Returns the ids replayed (those that were dead,
 * and of `applicationId` when given: another application's are left alone, as if not dead).
 */
async function replayIds(q: Queryable | Database, ids: readonly string[], requestedBy: string | null, applicationId?: string): Promise<string[]> {
  if (ids.length === 0) return [];
  // Ordered dead letters (migration 013): their keys are locked first, in a statement of their own,
  // so the replay's snapshot sees every delivery enqueued to them; one transaction for both.
  if ("transaction" in q) return q.transaction((tx) => replayIds(tx, ids, requestedBy, applicationId));
  await lockKeysOfDeadLetters(q, ids);
  const { rows } = await q.query<{ id: string }>(
    `WITH old AS (
       SELECT x.id, x.dead_reason, x.subscription_id, x.ordering_key, x.ordering_seq FROM outbound_deliveries x
       WHERE x.id = ANY($1::text[]) AND x.status = 'dead'
         AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM outbound_events e WHERE e.id = x.event_id AND e.application_id = $3))
       FOR UPDATE OF x
     ),
     -- Ordered delivery: a dead letter still its key's head goes again at once, first (the key
     -- waited for it) and unblocks the key; one skipped since re-joins its key at the end, behind
     -- what was enqueued meanwhile (n of them per key, in their old order).
     keyed AS (
       SELECT o.subscription_id, o.ordering_key,
              count(*) FILTER (WHERE o.ordering_seq < k.head_seq) AS n, bool_or(o.ordering_seq = k.head_seq) AS head
       FROM old o JOIN outbound_ordering_keys k ON k.subscription_id = o.subscription_id AND k.ordering_key = o.ordering_key
       WHERE o.ordering_seq IS NOT NULL
       GROUP BY o.subscription_id, o.ordering_key
     ),
     grown AS (
       UPDATE outbound_ordering_keys k
       SET last_seq = k.last_seq + g.n, blocked_at = CASE WHEN g.head THEN NULL ELSE k.blocked_at END, updated_at = now()
       FROM keyed g
       WHERE k.subscription_id = g.subscription_id AND k.ordering_key = g.ordering_key
       RETURNING k.subscription_id, k.ordering_key, k.last_seq - g.n AS base, k.head_seq
     ),
     tail AS (
       SELECT o.id, g.head_seq, g.base + row_number() OVER (PARTITION BY o.subscription_id, o.ordering_key ORDER BY o.ordering_seq) AS seq
       FROM old o JOIN grown g ON g.subscription_id = o.subscription_id AND g.ordering_key = o.ordering_key
       WHERE o.ordering_seq < g.head_seq
     ),
     replayed AS (
       UPDATE outbound_deliveries d
       SET status = 'pending', attempts = 0, lease_token = NULL, lease_expires_at = NULL,
           ordering_seq = COALESCE(t.seq, d.ordering_seq),
           next_attempt_at = CASE WHEN t.id IS NULL OR t.seq = t.head_seq THEN now() ELSE 'infinity' END,
           dead_reason = NULL, dead_at = NULL, replays = d.replays + 1, updated_at = now()
       FROM old LEFT JOIN tail t ON t.id = old.id
       WHERE d.id = old.id
       RETURNING d.id, old.dead_reason
     ),
     recorded AS (
       INSERT INTO outbound_replays (delivery_id, previous_reason, requested_by)
       SELECT id, dead_reason, $2 FROM replayed
     )
     SELECT id FROM replayed ORDER BY id`,
    [ids, requestedBy, applicationId ?? null],
  );
  if (rows.length > 0) await q.query("SELECT pg_notify($1, '')", [NOTIFY_CHANNEL]);
  return rows.map((r) => r.id);
}

/** Replays one dead letter; NotFoundError / NotADeadLetterError when it cannot be. */
export async function replayDeadLetter(q: Queryable, id: string, options: { requestedBy?: string } = {}): Promise<Delivery> {
  const replayed = await replayIds(q, [id], options.requestedBy ?? null);
  const { rows } = await q.query<Delivery>(
    `SELECT ${DELIVERY_COLUMNS} FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id WHERE d.id = $1`,
    [id],
  );
  if (!rows[0]) throw new NotFoundError("delivery", id);
  if (replayed.length === 0) throw new NotADeadLetterError(id, rows[0].status);
  return rows[0];
}

/** Most dead letters one bulk replay touches. */
export const MAX_BULK_REPLAY = 1000;

/**
 * Replays many dead letters: either the listed `ids` (those not dead are skipped and reported), or
 * every one matching `filter`, up to `limit` (default and maximum: MAX_BULK_REPLAY) per call.
 * With `applicationId`, only that application's dead letters are touched (others are skipped).
 */
export async function replayDeadLetters(
  q: Queryable,
  selection: { ids: string[] } | { filter: DeadLetterFilter; limit?: number },
  options: { requestedBy?: string; applicationId?: string } = {},
): Promise<{ replayed: string[]; skipped: string[] }> {
  let ids: string[];
  if ("ids" in selection) {
    if (selection.ids.length > MAX_BULK_REPLAY) {
      throw new OutboundValidationError(`Too many ids: ${selection.ids.length}; replay at most ${MAX_BULK_REPLAY} per call.`, [{ path: "ids", message: `at most ${MAX_BULK_REPLAY}` }]);
    }
    ids = [...new Set(selection.ids)];
  } else {
    const limit = Math.min(selection.limit ?? MAX_BULK_REPLAY, MAX_BULK_REPLAY);
    ids = (await listDeadLetters(q, { ...selection.filter, applicationId: options.applicationId ?? selection.filter.applicationId, limit })).map((d) => d.id);
  }
  const replayed = await replayIds(q, ids, options.requestedBy ?? null, options.applicationId);
  const done = new Set(replayed);
  return { replayed, skipped: ids.filter((id) => !done.has(id)) };
}
