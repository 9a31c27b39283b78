/** Claiming due deliveries under a lease: the only way a relay gets work. */
import type { Database, Queryable, Transaction } from "../../db/port.js";
import { prepared } from "../../db/prepared.js";
import type { ClaimedDelivery } from "../types.js";
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { grownRate, RATE_STATED_SHARE } from "../acceptedRate.js";

/** Deliveries of one subscription leased at once across all relays, unless it sets `maxInFlight` (OUTBOUND_MAX_IN_FLIGHT). */
export const DEFAULT_MAX_IN_FLIGHT = 1024;

interface ClaimRow {
  id: string;
  event_id: string;
  subscription_id: string;
  url: string;
  secrets: string[];
  body: string;
  attempts: number;
  max_attempts: number | null;
  headers: Record<string, string>;
  attempt_timeout_ms: number | null;
  /** Rate-limited subscriptions: this attempt's slot, and the claim statement's one reading of the clock (ms, Unix epoch). */
  slot_at: number | null;
  clock_at: number | null;
  ordering_key: string | null;
  /** ms, Unix epoch. */
  rate_limited_since: number | null;
  /** The slot is the configured limit's (kept strictly), not only a learnt or stated pace's. */
  strict_rate: boolean | null;
  transformation?: string | null;
  /** The subscription has endpoint authentication (migration 021). */
  has_auth: boolean;
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
    // Also: the prepared claim keeps its generic plan. PostgreSQL otherwise re-plans it for the
    // values while that plan's estimate looks cheaper (a small claim), paying the planning (as long
    // as running it) on every claim; the generic plan is the one shaped for it (EXPLAINed in
    // docs/outbound.md). One statement for both settings: one round trip.
    await tx.query("SELECT set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)");
    return write(tx);
  });
}

/** Local readings around the claim statement: performance.now() before and after, and the wall clock after. */
interface ClaimClock { sentAt: number; backAt: number; wallAtBack: number }

/**
 * A rate-limited attempt's slot on this process's clock (performance.now()). The slot is a time on
 * the database's clock, and so is the statement's reading of it (`clock_at`); that reading was
 * taken between `sentAt` and `backAt`, so the slot lies between `sentAt` and `backAt` plus its
 * distance from the reading, whatever the claim waited for before the statement (a connection,
 * PGlite's one connection, another claim's lock: a reading taken before such a wait put the slots
 * that much early). Within that bracket it is placed by the wall clock, exact where the relay's and
 * the database's clocks agree (one machine; NTP within a few ms, what RATE_JITTER_SECONDS
 * absorbs), and never further off than the statement's round trip where they do not.
 */
function slotOf(row: ClaimRow, clock: ClaimClock): ClaimedDelivery["slot"] {
  if (row.slot_at === null || row.clock_at === null) return null;
  const slotAt = Number(row.slot_at);
  const ahead = slotAt - Number(row.clock_at);
  const byWall = clock.backAt + (slotAt - clock.wallAtBack);
  const at = Math.min(Math.max(byWall, clock.sentAt + ahead), clock.backAt + ahead);
  const strict = row.strict_rate === true;
  return { at, latest: at + (strict ? RATE_LATENESS_SECONDS : PACE_LATENESS_SECONDS) * 1000, strict };
}

function toClaimed(row: ClaimRow, leaseToken: string, probe: boolean, clock?: ClaimClock): ClaimedDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    subscriptionId: row.subscription_id,
    url: row.url,
    secrets: row.secrets,
    body: row.body,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    headers: row.headers,
    timeoutMs: row.attempt_timeout_ms,
    slot: clock ? slotOf(row, clock) : null,
    leaseToken,
    orderingKey: row.ordering_key,
    transformation: row.transformation ?? null,
    hasAuth: row.has_auth,
    probe,
    rateLimitedSince: row.rate_limited_since === null ? null : Number(row.rate_limited_since),
  };
}

/** Takes the lease ($2 token, $3 seconds) on the rows whose ids `ids` selects, found by primary key. */
const lease = (ids: string) => `claimed AS (
     UPDATE outbound_deliveries d
     SET lease_token = $2::uuid,
         lease_expires_at = now() + $3::float8 * interval '1 second',
         claims = d.claims + 1,
         updated_at = now()
     WHERE d.id = ANY (ARRAY(${ids}))
     RETURNING d.id, d.event_id, d.subscription_id, d.attempts, d.ordering_key, d.rate_limited_since
   )`;

/**
 * Joins the event body and subscription to the rows just leased; the event's W3C trace context
 * (migration 023, stored when an SDK traced its enqueue) rides in the headers as `traceparent`
 * unless the subscription turned it off (`send_traceparent`), and the attempt span replaces it
 * with its own (shared/telemetry/instrument.ts); without one the headers are what they were. For a
 * rate-limited attempt, `slot` (SQL) gives its start and `clock` the statement's reading of the
 * clock it was set by (ms, Unix epoch).
 */
const load = (slot: string, clock: string) => `SELECT c.id, c.event_id, c.subscription_id, s.url, s.secrets, e.body, c.attempts, s.max_attempts,
          CASE WHEN e.traceparent IS NOT NULL AND s.send_traceparent
               THEN jsonb_build_object('traceparent', e.traceparent) || s.headers || COALESCE(e.headers, '{}'::jsonb)
               ELSE s.headers || COALESCE(e.headers, '{}'::jsonb) END AS headers,
          s.attempt_timeout_ms, ${slot} AS slot_at, ${clock} AS clock_at, c.ordering_key,
          extract(epoch FROM c.rate_limited_since) * 1000 AS rate_limited_since, s.rate_limit_per_second IS NOT NULL AS strict_rate, s.transformation,
          s.auth IS NOT NULL AS has_auth
   FROM claimed c
   JOIN outbound_events e ON e.id = c.event_id
   JOIN outbound_subscriptions s ON s.id = c.subscription_id`;
const LOAD = load("NULL::float8", "NULL::float8");

/** The end both claims share: lease the rows `ids` selects and load what sending them needs. */
const leaseAndLoad = (ids: string) => `${lease(ids)}
   ${LOAD}`;

/** No relay holds the row: never leased, or its lease ran out. */
const NO_LIVE_LEASE = (row: string) => `(${row}.lease_expires_at IS NULL OR ${row}.lease_expires_at <= now())`;

/**
 * Seconds between two attempts of a subscription limited to `rate` per second. An attempt starts
 * no earlier than its slot and is given up (released unsent) past RATE_LATENESS_SECONDS after it
 * (relay.ts), so starts fall in [slot, slot + L]; the requests then reach the receiver with some
 * jitter J more (network, and either side's process being descheduled on a busy machine). A
 * one-second window at the receiver holds at most floor(rate) of them as long as floor(rate) + 1
 * slots cannot fit in 1 + L + J seconds: spacing (1 + L + J) / floor(rate); below 1 per second,
 * 1 / rate + L + J. The price: the rate achieved is ~1 / 1.3 of the limit (L = 0.1 s, J = 0.2 s),
 * the margin that held in test/outbound/rateLimit.test.ts on this 2-core machine at load 14
 * (J = 0.05 s did not: 11 in one window; part of that was slots placed early, fixed since: slotOf).
 */
export const RATE_LATENESS_SECONDS = 0.1;
/**
 * How late an attempt paced only by a learnt or stated rate (acceptedRate.ts) may still start. A
 * pace is the receiver's own limit, whose bucket absorbs some bunching (and a 429 corrects it):
 * giving back every attempt a busy event loop made 100 ms late wasted their slots, the pace then
 * falling well below the rate it was set to (four relays at load 25: ~35 of 50 per second).
 */
export const PACE_LATENESS_SECONDS = 0.5;
const RATE_JITTER_SECONDS = 0.2;
const RATE_SPACING = (rate: string) => {
  const margin = 1 + RATE_LATENESS_SECONDS + RATE_JITTER_SECONDS;
  return `CASE WHEN ${rate} >= 1 THEN ${margin} / floor(${rate}) ELSE 1 / ${rate} + ${margin - 1} END`;
};
/**
 * The spacing of subscription row `s` at time `at`: the widest of its configured limit's (above),
 * its learnt rate's as grown since (acceptedRate.ts) and its stated quota's share. The learnt and
 * stated rates come from the receiver itself, so they are paced as they are, without the margin a
 * limit configured here keeps (the receiver's own bucket absorbs the jitter; a 429 corrects it).
 * 0 when none applies.
 */
const SPACING = (s: string, at: string) => `GREATEST(
       CASE WHEN ${s}.rate_limit_per_second IS NOT NULL THEN ${RATE_SPACING(`${s}.rate_limit_per_second`)} ELSE 0 END,
       CASE WHEN ${s}.learned_rate_per_second IS NOT NULL THEN 1 / ${grownRate(s, at)} ELSE 0 END,
       CASE WHEN ${s}.stated_rate_per_second IS NOT NULL THEN 1 / (${RATE_STATED_SHARE} * ${s}.stated_rate_per_second) ELSE 0 END)`;

/**
 * A subscription that may be claimed for: neither disabled, paused nor held (a Retry-After, a spent
 * quota), and no listener attached (`webhooks listen` gets its deliveries: docs/listen.md).
 */
const CLAIMABLE = (s: string) => `${s}.status <> 'disabled' AND ${s}.paused_at IS NULL AND (${s}.throttled_until IS NULL OR ${s}.throttled_until <= now())
       AND (${s}.listened_until IS NULL OR ${s}.listened_until <= now())`;

/**
 * The subscriptions that may be claimed for and have a due delivery no lease holds, locked unless
 * another transaction holds the row (SKIP LOCKED), and how many there were in all. A claim that
 * waited for those rows waited for whatever held them: a completion writing the health of 100
 * endpoints that had just timed out held every healthy endpoint's claim for up to 350 ms (issue
 * 28). The holder is a relay already working on that subscription; the claim says it skipped some
 * (`onBusy`) so that its relay looks again shortly instead of going idle. The claim statement
 * checks CLAIMABLE again: its snapshot, taken after the lock, sees a pause or a hold committed
 * since this one's.
 */
const lockDue = (candidates: string) => `WITH due AS MATERIALIZED (
     SELECT s.id
     FROM outbound_subscriptions s
     WHERE ${CLAIMABLE("s")} AND ${candidates}
       -- A scalar sub-select, not EXISTS (which would drop the ORDER BY): ordered, it walks the
       -- due-by-subscription index, never the subscription's dead letters.
       AND (
         SELECT true FROM outbound_deliveries d
         WHERE d.subscription_id = s.id AND d.status = 'pending' AND d.next_attempt_at <= now() AND ${NO_LIVE_LEASE("d")}
         ORDER BY d.next_attempt_at
         LIMIT 1
       )
   ),
   locked AS (
     SELECT s.id
     FROM outbound_subscriptions s
     WHERE s.id IN (SELECT id FROM due)
     ORDER BY s.id
     FOR NO KEY UPDATE OF s SKIP LOCKED
   )
   SELECT ARRAY(SELECT id FROM locked) AS ids, (SELECT count(*) FROM due)::int AS due`;
/** Every subscription with due work, but those the relay gives no share now ($1). */
const LOCK_DUE_SUBSCRIPTIONS = prepared("outbound_claim_lock", lockDue("s.id <> ALL ($1::text[])"));
/**
 * Only the subscriptions the relay gives a share now ($1): a claim that gives no first rounds
 * (perSubscription 0) locked every new subscription's row as well, for nothing, and the first-round
 * claim running beside it then skipped those rows: both took none of them while 2 000 deliveries
 * of new subscriptions were due (issue 28).
 */
const LOCK_LISTED_SUBSCRIPTIONS = prepared("outbound_claim_lock_listed", lockDue("s.id = ANY ($1::text[])"));

/**
 * The claim proper, for the subscriptions the first statement locked ($5). Parameters: $1 most rows,
 * $2 lease token, $3 lease seconds, $4 relay id, $6 default max_in_flight, $7 default share of one
 * subscription in this claim, $8/$9 this relay's own share per subscription, $10/$11 deliveries this
 * relay wrote or released per subscription since its last claim.
 */
const CLAIM_DUE = prepared("outbound_claim_due", `WITH done AS (
     SELECT * FROM unnest($10::text[], $11::int[]) AS done(id, n)
   ),
   share AS (
     SELECT * FROM unnest($8::text[], $9::int[]) AS share(id, n)
   ),
   limited AS (
     -- The rate limiter's slots (see RATE_SPACING): from its clock, or now if that has passed. Now is
     -- the statement's one reading of the wall clock, not now() (the transaction's start, which may
     -- be long before: the claim's first statement can wait for another claim's lock): the relay
     -- places the slots on its own clock from that reading (slotOf).
     SELECT s.id, ${SPACING("s", "c.t")} AS spacing, GREATEST(s.rate_next_at, c.t) AS start, c.t AS clock
     FROM outbound_subscriptions s
     CROSS JOIN (SELECT clock_timestamp() AS t) AS c
     WHERE s.id = ANY ($5::text[])
       AND (s.rate_limit_per_second IS NOT NULL OR s.learned_rate_per_second IS NOT NULL OR s.stated_rate_per_second IS NOT NULL)
   ),
   room AS (
     SELECT s.id, LEAST(
         COALESCE(s.max_in_flight, $6::int) - COALESCE((
           SELECT sum(CASE WHEN h.relay_id = $4::uuid THEN h.held - COALESCE((SELECT done.n FROM done WHERE done.id = s.id), 0) ELSE h.held END)
           FROM outbound_relay_holds h
           WHERE h.subscription_id = s.id AND h.expires_at > now()
         ), 0),
         COALESCE((SELECT share.n FROM share WHERE share.id = s.id), $7::int),
         -- Rate-limited: the slots starting within the next second.
         COALESCE((SELECT ceil(extract(epoch FROM l.clock + interval '1 second' - l.start) / l.spacing)::int FROM limited l WHERE l.id = s.id), $1::int)) AS n
     FROM outbound_subscriptions s
     WHERE s.id = ANY ($5::text[]) AND ${CLAIMABLE("s")}
   ),
   picked AS (
     SELECT p.id, p.subscription_id
     FROM room
     CROSS JOIN LATERAL (
       SELECT due.id, due.subscription_id, due.next_attempt_at
       FROM outbound_deliveries due
       WHERE due.subscription_id = room.id AND due.status = 'pending' AND due.next_attempt_at <= now() AND ${NO_LIVE_LEASE("due")}
       ORDER BY due.next_attempt_at
       LIMIT GREATEST(room.n, 0)
       FOR UPDATE OF due SKIP LOCKED
     ) p
     ORDER BY p.next_attempt_at
     LIMIT $1
   ),
   ${lease("SELECT id FROM picked")},
   counted AS (
     -- This relay's holds: what it just claimed, less what it has finished. Rows in id order, so two
     -- claims of one relay writing its rows at once never deadlock.
     INSERT INTO outbound_relay_holds (subscription_id, relay_id, held, expires_at)
     SELECT x.id, $4::uuid, x.n, now() + $3::float8 * interval '1 second'
     FROM (
       SELECT id, sum(n)::int AS n
       FROM (SELECT subscription_id AS id, 1 AS n FROM claimed UNION ALL SELECT id, -n FROM done) AS u
       GROUP BY id
       ORDER BY id
     ) AS x
     ON CONFLICT (subscription_id, relay_id) DO UPDATE SET
       held = CASE WHEN outbound_relay_holds.expires_at > now() THEN outbound_relay_holds.held ELSE 0 END + excluded.held,
       expires_at = excluded.expires_at
   ),
   numbered AS (
     SELECT c.id, row_number() OVER (PARTITION BY c.subscription_id ORDER BY c.id) - 1 AS k FROM claimed c
   ),
   clocked AS (
     -- The rate limiter's clock moves on by one slot per delivery taken (the row is locked).
     UPDATE outbound_subscriptions s
     SET rate_next_at = l.start + l.spacing * (SELECT count(*) FROM claimed c WHERE c.subscription_id = l.id) * interval '1 second'
     FROM limited l
     WHERE s.id = l.id AND EXISTS (SELECT 1 FROM claimed c WHERE c.subscription_id = l.id)
   )
   ${load(`(SELECT extract(epoch FROM l.start) * 1000 + l.spacing * 1000 * (SELECT n.k FROM numbered n WHERE n.id = c.id)
             FROM limited l WHERE l.id = c.subscription_id)`,
     "(SELECT extract(epoch FROM l.clock) * 1000 FROM limited l WHERE l.id = c.subscription_id)")}`);

export interface ClaimRequest {
  /** Most deliveries in all. */
  limit: number;
  leaseSeconds: number;
  leaseToken: string;
  /** This relay's id in outbound_relay_holds (one per relay). Default: a new random one. */
  relayId?: string;
  /** max_in_flight of the subscriptions that set none (OUTBOUND_MAX_IN_FLIGHT). Default: DEFAULT_MAX_IN_FLIGHT. */
  defaultMaxInFlight?: number;
  /** Most deliveries of one subscription in this claim, unless `shares` names it. Default: `limit`. */
  perSubscription?: number;
  /** This relay's own cap per subscription for this claim (0: skip it). */
  shares?: ReadonlyMap<string, number>;
  /** Deliveries of each subscription written or released since this relay's last claim. */
  done?: ReadonlyMap<string, number>;
  /**
   * Called with how many subscriptions with due work this claim skipped because another
   * transaction held them (a claim, a completion): they are worth another look soon.
   */
  onBusy?: (skipped: number) => void;
}

/**
 * Claims due deliveries of subscriptions that are neither disabled nor paused, fairly: each
 * subscription gets at most its share of the claim (its oldest due deliveries), and never more
 * than its `max_in_flight` leased at once across every relay sharing the database; the shares
 * together are cut to `limit`, oldest due first. A backlog thus fills neither a claim nor a relay.
 *
 * Two statements in the caller's transaction (leaseWrite). The first locks the subscriptions with
 * due work that nothing else holds (with `perSubscription` 0, only those `shares` gives room), in
 * id order: claims that could count the same subscription never run side by side (the later one
 * skips it), and the second statement, starting after the lock, sees every hold committed before it. What is leased is counted in
 * outbound_relay_holds, one row per relay and subscription (see migration 011): this relay's row
 * gets what it claims now, less what it finished since its last claim.
 *
 * SKIP LOCKED on the deliveries lets relays claim side by side; the lease (`lease_token`,
 * `lease_expires_at`) hides the row from other claims until it runs out. The lease columns are in
 * no index, so a claim is a HOT update (migration 005); leased rows stay at the head of their
 * subscription's due index, and each claim steps over them (at most that subscription's leases).
 * The ids are picked in an `ARRAY(...)` sub-select (an InitPlan, run once); the UPDATE then finds
 * those rows by primary key, and the event body and subscription are joined to the few rows
 * returned (joining inside the UPDATE let the planner hash the whole deliveries table).
 */
export async function claimDueDeliveries(q: Queryable | Database, request: ClaimRequest): Promise<ClaimedDelivery[]> {
  // The two statements must share a transaction (the lock must last until the claim is written).
  if ("transaction" in q) return leaseWrite(q, (tx) => claimDueDeliveries(tx, request));
  const tx = q;
  const done = [...(request.done ?? [])].filter(([, n]) => n > 0);
  const onlyListed = request.perSubscription === 0;
  const listed = [...(request.shares ?? [])].filter(([, n]) => (onlyListed ? n > 0 : n <= 0)).map(([id]) => id);
  let due: string[] = [];
  if (!onlyListed || listed.length > 0) {
    const { rows: [lock] } = await tx.query<{ ids: string[]; due: number }>(onlyListed ? LOCK_LISTED_SUBSCRIPTIONS : LOCK_DUE_SUBSCRIPTIONS, [listed]);
    due = lock!.ids;
    if (lock!.due > due.length) request.onBusy?.(lock!.due - due.length);
  }
  if (due.length === 0 && done.length === 0) return [];
  const shares = [...(request.shares ?? [])];
  const sentAt = performance.now();
  const { rows } = await tx.query<ClaimRow>(CLAIM_DUE, [
    request.limit, request.leaseToken, request.leaseSeconds, request.relayId ?? randomUUID(), due,
    request.defaultMaxInFlight ?? DEFAULT_MAX_IN_FLIGHT, request.perSubscription ?? request.limit,
    shares.map(([id]) => id), shares.map(([, n]) => n),
    done.map(([id]) => id), done.map(([, n]) => n),
  ]);
  const clock = { sentAt, backAt: performance.now(), wallAtBack: Date.now() };
  return keepPaceSpacing(rows.map((r) => toClaimed(r, request.leaseToken, false, clock)), clock.backAt);
}

/**
 * A paced (not strictly limited) subscription's slots that are already past when the claim comes
 * back (a slow statement: PGlite on a busy event loop, a loaded server) are moved on together by
 * the first one's lateness, keeping their spacing: sent at once instead, they reached the receiver
 * as one burst, which its bucket answered with 429s.
 */
function keepPaceSpacing(claimed: ClaimedDelivery[], now: number): ClaimedDelivery[] {
  const paced = claimed.filter((d) => d.slot && !d.slot.strict);
  const lag = new Map<string, number>();
  for (const d of paced) lag.set(d.subscriptionId, Math.max(lag.get(d.subscriptionId) ?? 0, now - d.slot!.at));
  for (const d of paced) {
    const by = lag.get(d.subscriptionId)!;
    if (by > 0) d.slot = { ...d.slot!, at: d.slot!.at + by, latest: d.slot!.latest + by };
  }
  return claimed;
}

const REPORT_DONE = prepared("outbound_holds_done", `UPDATE outbound_relay_holds h
   SET held = h.held - d.n
   FROM unnest($2::text[], $3::int[]) AS d(id, n)
   WHERE h.relay_id = $1::uuid AND h.subscription_id = d.id`);

/** Takes finished deliveries off this relay's holds without claiming (a relay stopping, or going idle). */
export async function reportDone(q: Queryable, relayId: string, done: ReadonlyMap<string, number>): Promise<void> {
  const entries = [...done].filter(([, n]) => n > 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length === 0) return;
  await q.query(REPORT_DONE, [relayId, entries.map(([id]) => id), entries.map(([, n]) => n)]);
}

const RENEW_HOLDS = prepared("outbound_holds_renew", `UPDATE outbound_relay_holds
   SET expires_at = now() + $2::float8 * interval '1 second'
   WHERE relay_id = $1::uuid AND held > 0`);

/** Keeps this relay's holds counted while it still holds deliveries (they run out with its leases). */
export async function renewHolds(q: Queryable, relayId: string, leaseSeconds: number): Promise<void> {
  await q.query(RENEW_HOLDS, [relayId, leaseSeconds]);
}

/** Forgets holds of relays long gone, rows of nothing held (one per relay run and subscription), and old rate reports. */
export async function forgetHolds(q: Queryable): Promise<number> {
  // With the relays' reports of what endpoints accepted, which count for a second (completeDeliveries.ts).
  const { rowCount } = await q.query(`WITH reports AS (DELETE FROM outbound_rate_reports WHERE reported_at < now() - interval '10 minutes')
     DELETE FROM outbound_relay_holds WHERE held <= 0 OR expires_at < now() - interval '10 minutes'`);
  return rowCount ?? 0;
}

const CLAIM_PROBES = prepared("outbound_claim_probes", `WITH probed AS (
     SELECT id FROM outbound_subscriptions
     -- A paused subscription holds all its deliveries, probes included; a deleted one has none.
     WHERE status = 'disabled' AND next_probe_at <= now() AND paused_at IS NULL AND deleted_at IS NULL
       AND (listened_until IS NULL OR listened_until <= now())
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
       -- Not a delivery waiting its turn in its ordering key (migration 013): only a key's head goes.
       WHERE d.subscription_id = b.id AND d.status = 'pending' AND d.next_attempt_at <> 'infinity' AND ${NO_LIVE_LEASE("d")}
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
