/**
 * Ordered delivery (issue 15, migration 013), the operator's side: the keys of an ordered
 * subscription that have work (one in progress, others waiting behind it, or a dead letter holding
 * the key), and skipping a dead letter that blocks its key.
 *
 * The model, in short (docs/outbound.md#ordered-delivery): per (subscription, ordering key) one
 * row in outbound_ordering_keys; each delivery has a place (ordering_seq); only the head's is ever
 * due, the others wait at next_attempt_at = 'infinity'. The head moves on when it is delivered
 * (completeDeliveries) or skipped here; a dead head blocks the key until it is replayed (it goes
 * again, first) or skipped (it stays a dead letter; the next delivery goes).
 */
import type { Database, Queryable } from "../db/port.js";
import { KeyNotBlockedError, NotFoundError } from "./errors.js";
import { releaseNext } from "./sql/completeDeliveries.js";

export interface OrderingKeyState {
  orderingKey: string;
  /** The head's dead letter holds the key (since `blockedAt`) until it is replayed or skipped. */
  blocked: boolean;
  blockedAt: Date | null;
  /** Deliveries waiting behind the head. */
  waiting: number;
  /** The delivery whose turn it is: pending (due, in flight or retrying) or dead; null if retention purged its dead letter. */
  head: { id: string; status: "pending" | "dead" | "delivered" | "cancelled"; attempts: number; deadReason: string | null; nextAttemptAt: Date | null } | null;
  updatedAt: Date;
}

interface KeyRow {
  ordering_key: string;
  blocked_at: Date | null;
  waiting: string | number;
  head_id: string | null;
  head_status: "pending" | "dead" | "delivered" | "cancelled" | null;
  head_attempts: number | null;
  dead_reason: string | null;
  next_attempt_at: Date | null;
  updated_at: Date;
}

const toState = (r: KeyRow): OrderingKeyState => ({
  orderingKey: r.ordering_key,
  blocked: r.blocked_at !== null,
  blockedAt: r.blocked_at,
  waiting: Number(r.waiting),
  head: r.head_id === null
    ? null
    : { id: r.head_id, status: r.head_status!, attempts: r.head_attempts!, deadReason: r.dead_reason, nextAttemptAt: r.next_attempt_at },
  updatedAt: r.updated_at,
});

/** The key's row and its head delivery (LEFT JOIN: a purged dead letter leaves none). */
const KEY_WITH_HEAD = `SELECT k.ordering_key, k.blocked_at, k.last_seq - k.head_seq AS waiting, k.updated_at, k.head_seq, k.last_seq,
       d.id AS head_id, d.status AS head_status, d.attempts AS head_attempts, d.dead_reason,
       CASE WHEN d.status = 'pending' THEN d.next_attempt_at END AS next_attempt_at
     FROM outbound_ordering_keys k
     LEFT JOIN outbound_deliveries d ON d.subscription_id = k.subscription_id AND d.ordering_key = k.ordering_key AND d.ordering_seq = k.head_seq`;

async function assertSubscription(q: Queryable, subscriptionId: string): Promise<void> {
  const { rows } = await q.query("SELECT 1 FROM outbound_subscriptions WHERE id = $1 AND deleted_at IS NULL", [subscriptionId]);
  if (rows.length === 0) throw new NotFoundError("subscription", subscriptionId);
}

/**
 * The keys of a subscription that have work (idle keys are not listed), in key order; `after` is
 * the last key of the previous page; `blocked` keeps only the blocked (true) or only the moving
 * (false) ones. Walks the index of active keys: a page costs its size, however many keys there are.
 */
export async function listOrderingKeys(
  q: Queryable,
  subscriptionId: string,
  options: { blocked?: boolean; after?: string; limit?: number } = {},
): Promise<OrderingKeyState[]> {
  await assertSubscription(q, subscriptionId);
  const { rows } = await q.query<KeyRow>(
    `${KEY_WITH_HEAD}
     WHERE k.subscription_id = $1 AND k.head_seq <= k.last_seq
       AND ($2::text IS NULL OR k.ordering_key > $2)
       AND ($4::boolean IS NULL OR (k.blocked_at IS NOT NULL) = $4)
     ORDER BY k.ordering_key
     LIMIT $3`,
    [subscriptionId, options.after ?? null, options.limit ?? 100, options.blocked ?? null],
  );
  return rows.map(toState);
}

/** One key of a subscription (idle or not); NotFoundError if it never had a delivery. */
export async function getOrderingKey(q: Queryable, subscriptionId: string, orderingKey: string): Promise<OrderingKeyState> {
  await assertSubscription(q, subscriptionId);
  const { rows } = await q.query<KeyRow>(`${KEY_WITH_HEAD} WHERE k.subscription_id = $1 AND k.ordering_key = $2`, [subscriptionId, orderingKey]);
  if (!rows[0]) throw new NotFoundError("ordering key", orderingKey);
  return toState(rows[0]);
}

export interface SkipResult {
  orderingKey: string;
  /** The dead letter skipped (it stays a dead letter, replayable: a replay then sends it after what the key has meanwhile); null if retention had purged it. */
  skipped: string | null;
  /** The delivery that is now due, or null when none waits. */
  released: string | null;
}

/**
 * Skips the dead letter that blocks a key: the next delivery of the key goes; the dead letter stays
 * a dead letter. KeyNotBlockedError when the key's head is not dead (pending, in flight or
 * retrying: nothing to skip), or when `deliveryId` is given and is not the blocking one (a second
 * click must not skip the next dead letter too). One transaction holding the key's row: enqueues
 * and completions of the key wait for it.
 */
export async function skipOrderingKey(
  db: Database | Queryable,
  subscriptionId: string,
  orderingKey: string,
  options: { deliveryId?: string } = {},
): Promise<SkipResult> {
  if ("transaction" in db) return db.transaction((tx) => skipOrderingKey(tx, subscriptionId, orderingKey, options));
  const tx = db;
  await assertSubscription(tx, subscriptionId);
  const { rows } = await tx.query<KeyRow & { head_seq: string; last_seq: string }>(
    `${KEY_WITH_HEAD} WHERE k.subscription_id = $1 AND k.ordering_key = $2 FOR UPDATE OF k`,
    [subscriptionId, orderingKey],
  );
  const key = rows[0];
  if (!key) throw new NotFoundError("ordering key", orderingKey);
  const idle = BigInt(key.head_seq) > BigInt(key.last_seq);
  // Blocked: its head is a dead letter, or the dead letter was purged by retention (no head row).
  const blocked = !idle && (key.head_status === "dead" || key.head_id === null);
  if (!blocked) throw new KeyNotBlockedError(orderingKey, idle ? "idle" : key.head_status ?? "idle");
  if (options.deliveryId !== undefined && options.deliveryId !== key.head_id) {
    throw new KeyNotBlockedError(orderingKey, "dead", `Delivery ${options.deliveryId} does not block key ${orderingKey}${key.head_id ? ` (${key.head_id} does)` : ""}; list the key again before skipping.`);
  }
  await tx.query(
    `UPDATE outbound_ordering_keys SET head_seq = head_seq + 1, blocked_at = NULL, updated_at = now()
     WHERE subscription_id = $1 AND ordering_key = $2`,
    [subscriptionId, orderingKey],
  );
  await releaseNext(tx, [{ subscriptionId, orderingKey }]);
  const next = await tx.query<{ id: string }>(
    `SELECT d.id FROM outbound_ordering_keys k
     JOIN outbound_deliveries d ON d.subscription_id = k.subscription_id AND d.ordering_key = k.ordering_key AND d.ordering_seq = k.head_seq
     WHERE k.subscription_id = $1 AND k.ordering_key = $2 AND d.status = 'pending'`,
    [subscriptionId, orderingKey],
  );
  return { orderingKey, skipped: key.head_id, released: next.rows[0]?.id ?? null };
}

/**
 * Locks the ordering keys of those of `ids` that are ordered dead letters, in key order, so a
 * replay of them sees (in its next statement) every delivery enqueued to those keys, and no
 * completion or skip moves the keys meanwhile. For deadLetters.ts's replays.
 */
export async function lockKeysOfDeadLetters(tx: Queryable, ids: readonly string[]): Promise<void> {
  await tx.query(
    `SELECT 1 FROM outbound_ordering_keys k
     WHERE (k.subscription_id, k.ordering_key) IN (
       SELECT d.subscription_id, d.ordering_key FROM outbound_deliveries d
       WHERE d.id = ANY ($1::text[]) AND d.status = 'dead' AND d.ordering_seq IS NOT NULL)
     ORDER BY k.subscription_id, k.ordering_key
     FOR UPDATE OF k`,
    [ids],
  );
}
