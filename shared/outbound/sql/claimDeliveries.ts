/** Claiming due deliveries under a lease: the only way a relay gets work. */
import type { Database, Queryable, Transaction } from "../../db/port.js";
import { prepared } from "../../db/prepared.js";
import type { ClaimedDelivery } from "../types.js";

interface ClaimRow {
  id: string;
  event_id: string;
  subscription_id: string;
  url: string;
  secrets: string[];
  body: string;
  attempts: number;
  max_attempts: number | null;
}

/**
 * Runs a statement that only writes leases (a claim, a renewal) in a transaction that commits
 * without waiting for its WAL flush (~2.5 ms of fsync here, a claim's whole cost once its plan is
 * prepared). Safe because a lease is all it writes: if PostgreSQL crashes before the flush, the
 * lease is forgotten and the delivery is due again (or sooner), and is sent again with the same
 * webhook-id, the duplicate at-least-once already allows; the holder's completion is then rejected
 * as stale and logged. Other sessions see the lease at commit, flush or not. Completions, which
 * record what happened, keep the default (durable) commit.
 */
export function leaseWrite<T>(db: Database, write: (tx: Transaction) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query("SET LOCAL synchronous_commit = off");
    return write(tx);
  });
}

function toClaimed(row: ClaimRow, leaseToken: string, probe: boolean): ClaimedDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    subscriptionId: row.subscription_id,
    url: row.url,
    secrets: row.secrets,
    body: row.body,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    leaseToken,
    probe,
  };
}

/**
 * The end both claims share: take the lease ($2 token, $3 seconds) on the rows whose ids `ids`
 * selects, found by primary key, and join the event body and subscription to the rows returned.
 */
const leaseAndLoad = (ids: string) => `claimed AS (
     UPDATE outbound_deliveries d
     SET lease_token = $2::uuid,
         lease_expires_at = now() + $3::float8 * interval '1 second',
         claims = d.claims + 1,
         updated_at = now()
     WHERE d.id = ANY (ARRAY(${ids}))
     RETURNING d.id, d.event_id, d.subscription_id, d.attempts
   )
   SELECT c.id, c.event_id, c.subscription_id, s.url, s.secrets, e.body, c.attempts, s.max_attempts
   FROM claimed c
   JOIN outbound_events e ON e.id = c.event_id
   JOIN outbound_subscriptions s ON s.id = c.subscription_id`;

/** No relay holds the row: never leased, or its lease ran out. */
const NO_LIVE_LEASE = (row: string) => `(${row}.lease_expires_at IS NULL OR ${row}.lease_expires_at <= now())`;

const CLAIM_DUE = prepared("outbound_claim_due", `WITH ${leaseAndLoad(`
       SELECT due.id
       FROM outbound_deliveries due
       JOIN outbound_subscriptions s ON s.id = due.subscription_id
       WHERE due.status = 'pending' AND due.next_attempt_at <= now() AND ${NO_LIVE_LEASE("due")}
         AND s.status <> 'disabled'
       ORDER BY due.next_attempt_at
       LIMIT $1
       FOR UPDATE OF due SKIP LOCKED`)}`);

/**
 * Claims up to `limit` due deliveries of subscriptions that are not disabled, oldest due first.
 * SKIP LOCKED lets relays claim side by side without waiting on each other; the lease
 * (`lease_token`, `lease_expires_at`) hides the row from other claims until it runs out (then, the
 * holder having died, it is due again). The lease columns are in no index, so a claim is a HOT
 * update (migration 005); the price is that leased rows stay at the head of the due index, and
 * each claim steps over them (at most the relays' `concurrency`, read from cached pages).
 *
 * Shape, for the planner: the ids are picked in an `ARRAY(...)` sub-select (an InitPlan, run once)
 * that walks the partial index `outbound_deliveries_due` in order and stops at the limit; the UPDATE
 * then finds those rows by primary key, and the event body and subscription are joined to the few
 * rows returned. Joining them inside the UPDATE instead (`UPDATE … FROM due, events, subscriptions`)
 * let the planner hash the whole deliveries table on every claim (a sequential scan: ~60 ms at
 * 20 000 rows against ~10 ms this way, and growing with every delivered row kept).
 */
export async function claimDueDeliveries(
  q: Queryable,
  options: { limit: number; leaseSeconds: number; leaseToken: string },
): Promise<ClaimedDelivery[]> {
  const { rows } = await q.query<ClaimRow>(
    CLAIM_DUE,
    [options.limit, options.leaseToken, options.leaseSeconds],
  );
  return rows.map((r) => toClaimed(r, options.leaseToken, false));
}

const CLAIM_PROBES = prepared("outbound_claim_probes", `WITH probed AS (
     SELECT id FROM outbound_subscriptions
     WHERE status = 'disabled' AND next_probe_at <= now()
     ORDER BY next_probe_at
     LIMIT $1
     FOR UPDATE SKIP LOCKED
   ),
   bumped AS (
     UPDATE outbound_subscriptions s
     SET next_probe_at = now() + $4::float8 * interval '1 second', updated_at = now()
     FROM probed
     WHERE s.id = probed.id
     RETURNING s.id
   ),
   picked AS (
     SELECT p.id
     FROM bumped b
     CROSS JOIN LATERAL (
       SELECT d.id FROM outbound_deliveries d
       WHERE d.subscription_id = b.id AND d.status = 'pending' AND ${NO_LIVE_LEASE("d")}
       ORDER BY d.created_at, d.id
       LIMIT 1
       FOR UPDATE SKIP LOCKED
     ) p
   ),
   ${leaseAndLoad("SELECT id FROM picked")}`);

/**
 * For each disabled subscription whose probe is due (circuit-breaker disables only; 410 Gone has no
 * probe time), claims its oldest pending delivery that no live lease holds, and schedules the next
 * probe. The subscription row lock makes one relay probe an endpoint at a time.
 */
export async function claimProbeDeliveries(
  q: Queryable,
  options: { limit: number; leaseSeconds: number; leaseToken: string; probeIntervalSeconds: number },
): Promise<ClaimedDelivery[]> {
  const { rows } = await q.query<ClaimRow>(
    CLAIM_PROBES,
    [options.limit, options.leaseToken, options.leaseSeconds, options.probeIntervalSeconds],
  );
  return rows.map((r) => toClaimed(r, options.leaseToken, true));
}
