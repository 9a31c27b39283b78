/**
 * Deliveries the relay cannot send because their subscription's secrets do not decrypt with its
 * ENCRYPTION_KEYS (another process wrote them with other keys, or a key was dropped too early):
 * they wait, pending, with the reason in `last_error` (shared/outbound/sql/deferUnsent.ts). This
 * is what GET /healthz reports about them, read through migration 019's partial index.
 */
import type { Queryable } from "../db/port.js";
import { UNSENT_PREFIX } from "./sql/deferUnsent.js";

/** Subscriptions named in the problem, at most. */
const LISTED = 5;

/** One sentence for /healthz, or null when no delivery waits for its secrets. */
export async function unsentDeliveriesProblem(q: Queryable): Promise<string | null> {
  const { rows } = await q.query<{ subscription_id: string; n: number; reason: string; total: number; subscriptions: number }>(
    `SELECT subscription_id, count(*)::int AS n, min(last_error) AS reason,
            sum(count(*)) OVER ()::int AS total, count(*) OVER ()::int AS subscriptions
     FROM outbound_deliveries
     WHERE status = 'pending' AND last_error LIKE 'secrets unreadable:%'
     GROUP BY subscription_id
     ORDER BY subscription_id
     LIMIT ${LISTED}`,
  );
  const first = rows[0];
  if (!first) return null;
  const { total, subscriptions } = first;
  const ids = rows.map((r) => r.subscription_id).join(", ") + (subscriptions > rows.length ? ` and ${subscriptions - rows.length} more` : "");
  return `${total} ${total === 1 ? "delivery waits" : "deliveries wait"} unsent: the relay cannot decrypt the secrets of subscription${subscriptions === 1 ? "" : "s"} ${ids} ` +
    `(${first.reason.slice(UNSENT_PREFIX.length)})`;
}
