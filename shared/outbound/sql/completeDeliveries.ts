/** Writing a batch of finished attempts: health, delivery state and attempt log in one transaction. */
import type { Database, Queryable } from "../../db/port.js";
import { NOTIFY_CHANNEL } from "../notify.js";
import { prepared } from "../../db/prepared.js";
import type { HealthPolicy } from "../health.js";
import { DEFAULT_HEALTH_POLICY, summariseHealth } from "../health.js";
import type { Completion } from "../types.js";
import { ACCEPTED_WINDOW_MS, grownRate, RATE_DECREASE, RATE_FLOOR_PER_SECOND, RATE_MOST_DECREASE, RATE_RELEARN_SECONDS } from "../acceptedRate.js";

export interface HealthTransition {
  subscriptionId: string;
  from: string;
  to: string;
}

export interface CompletionResult {
  /** Deliveries whose new state was written. */
  accepted: string[];
  /** Deliveries whose outcome was logged, not applied: the lease had passed to another relay, or the delivery was cancelled. */
  stale: string[];
  /** Of `stale`, those cancelled meanwhile (their subscription was deleted during the attempt): expected, not a lost lease. */
  cancelled: string[];
  /** Subscriptions whose status changed. */
  transitions: HealthTransition[];
  /** Subscriptions this write left held (no claims) by a Retry-After or a spent quota, until when (ms, Unix epoch). */
  holds: { subscriptionId: string; until: number }[];
}

/** PostgreSQL text cannot hold NUL; a receiver's binary answer must not fail the whole batch. */
const clean = (s: string | null) => (s === null ? null : s.replace(/\u0000/g, "\uFFFD"));

/**
 * SQL: what endpoint `s` accepted lately as every relay saw it at a 429: this relay's view (u) and
 * the last reports of the others ($31 is this relay) in the window successes are counted over.
 * NULL for a row without a 429 and a view (nothing is looked up for it).
 */
const REPORTED = `(CASE WHEN u.limited AND u.accepted IS NOT NULL THEN u.accepted + COALESCE((
     SELECT sum(r.accepted_per_second) FROM outbound_rate_reports r
     WHERE r.subscription_id = s.id AND r.relay_id IS DISTINCT FROM $31::uuid
       AND r.reported_at > now() - ${ACCEPTED_WINDOW_MS} * interval '1 millisecond'), 0) END)`;

/**
 * SQL: this relay ($31) is the only one known to send to endpoint `s`: no other holds its
 * deliveries, none reported a 429 from it lately. One relay's view of what several shared is
 * a part of it, and a part the relays do not share evenly (migration 040).
 */
const ALONE = `(NOT EXISTS (SELECT 1 FROM outbound_relay_holds h
                    WHERE h.subscription_id = s.id AND h.relay_id IS DISTINCT FROM $31::uuid AND h.held > 0 AND h.expires_at > now())
       AND NOT EXISTS (SELECT 1 FROM outbound_rate_reports r
                       WHERE r.subscription_id = s.id AND r.relay_id IS DISTINCT FROM $31::uuid AND r.reported_at > now() - interval '10 seconds'))`;

/**
 * The batch in one statement (one round trip, one commit, whatever its size): the subscriptions'
 * health ($1–$7, throttle $21, window $22, probe successes $23, rate learning $24–$26, $29, this relay $31), then the delivery state and attempt log ($8–$20, 429s $27, request headers $28, inline first attempts $30). Its rows say which deliveries
 * were updated and which subscriptions were written.
 */
const COMPLETE_BATCH = prepared("outbound_complete_batch", `WITH u AS (
     SELECT * FROM unnest($1::text[], $2::bool[], $3::int[], $4::bool[], $21::float8[], $23::bool[], $24::bool[], $25::float8[], $26::float8[], $29::float8[])
       AS u(id, succeeded, failures, gone, throttle, probe_ok, limited, accepted, stated, limited_share)
   ),
   n AS (
     SELECT s.id, u.succeeded, u.gone, u.throttle, u.probe_ok, s.status AS old_status, u.stated,
            -- A 429 teaches the endpoint's rate again (acceptedRate.ts), once a second at most.
            -- Not paced yet: the rate it accepted before the 429, the sum of what each relay saw
            -- (this relay's view and the others' reports of the last second, migration 040). Paced:
            -- the pace less the share of it the receiver refused lately (every relay sees the same
            -- share: its requests are a sample of all of them), or, when this relay is the only one
            -- sending there, what it saw accepted, the lower; never below RATE_MOST_DECREASE of the pace.
            -- That is limited_at; the learnt rate is RATE_DECREASE times it. Nothing to learn from
            -- without either.
            u.limited AND (s.learned_at IS NULL OR s.learned_at <= now() - ${RATE_RELEARN_SECONDS} * interval '1 second')
              AND (u.accepted IS NOT NULL OR s.learned_rate_per_second IS NOT NULL) AS relearn,
            s.learned_rate_per_second IS NULL OR u.limited_share IS NULL AS from_reports,
            u.accepted,
            ${REPORTED} AS reported,
            -- A rate learnt from reports in the last second is raised by the first report of each
            -- other relay since: the others' 429s come in the same second, each with its own view.
            u.limited AND u.accepted IS NOT NULL AND s.learned_from_reports
              AND s.learned_at > now() - ${RATE_RELEARN_SECONDS} * interval '1 second'
              AND NOT EXISTS (SELECT 1 FROM outbound_rate_reports r
                              WHERE r.subscription_id = s.id AND r.relay_id = $31::uuid AND r.reported_at >= s.learned_at)
              -- Raised only: a report read before another relay's raise committed may miss that one.
              AND ${REPORTED} > s.limited_at_rate_per_second AS refine,
            LEAST(10000, GREATEST(${RATE_FLOOR_PER_SECOND}, ${RATE_MOST_DECREASE} * COALESCE(${grownRate("s", "now()")}, 0), CASE
              WHEN s.learned_rate_per_second IS NOT NULL AND u.limited_share IS NOT NULL
                THEN LEAST((1 - u.limited_share) * ${grownRate("s", "now()")}, COALESCE(CASE WHEN ${ALONE} THEN u.accepted END, 'Infinity'::float8))
              ELSE LEAST(COALESCE(${REPORTED}, 'Infinity'::float8), COALESCE(${grownRate("s", "now()")}, 'Infinity'::float8))
              END)) AS limited_at,
            CASE WHEN u.succeeded THEN u.failures ELSE s.consecutive_failures + u.failures END AS failures,
            -- Start of the current run of failures (the breaker's time window); NULL while none.
            CASE WHEN (CASE WHEN u.succeeded THEN u.failures ELSE s.consecutive_failures + u.failures END) = 0 THEN NULL
                 WHEN u.succeeded OR s.failing_since IS NULL THEN now()
                 ELSE s.failing_since END AS since
     FROM outbound_subscriptions s JOIN u ON u.id = s.id
     -- A healthy endpoint answering 2xx needs no write (and no lock): the hot path stays cheap.
     WHERE u.gone OR u.failures > 0 OR s.status <> 'active' OR s.consecutive_failures <> 0 OR u.limited OR u.throttle > 0
       -- A stated quota is written when it is new or changed (one write, not one per batch).
       OR (u.stated IS NOT NULL AND u.stated IS DISTINCT FROM s.stated_rate_per_second)
     ORDER BY s.id
     -- NO KEY UPDATE, not UPDATE: enqueue's foreign-key checks (KEY SHARE) need not wait for it.
     FOR NO KEY UPDATE OF s
   ),
   m AS (
     SELECT n.*, CASE
         WHEN n.gone THEN 'disabled'
         -- Open, the circuit closes only on a probe's success (half-open): a success of an attempt
         -- that was in flight when it opened does not flip it back (no flapping).
         WHEN n.old_status = 'disabled' AND NOT n.probe_ok THEN 'disabled'
         -- Opens on sustained failure only: the count AND the time window (a burst of concurrent
         -- failures within milliseconds reaches the count, not the window).
         WHEN n.failures >= $5 AND n.since <= now() - $22::float8 * interval '1 second' THEN 'disabled'
         WHEN n.failures >= $6 THEN 'degraded'
         ELSE 'active' END AS new_status
     FROM n
   ),
   health AS (
     UPDATE outbound_subscriptions s SET
       status = m.new_status,
       consecutive_failures = m.failures,
       failing_since = m.since,
       last_failure_at = CASE WHEN m.failures > 0 OR m.gone THEN now() ELSE s.last_failure_at END,
       learned_rate_per_second = CASE WHEN m.relearn THEN GREATEST(${RATE_FLOOR_PER_SECOND}, ${RATE_DECREASE} * m.limited_at)
                                      WHEN m.refine THEN ${RATE_DECREASE} * LEAST(10000, m.reported) ELSE s.learned_rate_per_second END,
       limited_at_rate_per_second = CASE WHEN m.relearn THEN m.limited_at WHEN m.refine THEN LEAST(10000, m.reported) ELSE s.limited_at_rate_per_second END,
       -- A raise keeps the time learnt: the climb from it goes on (acceptedRate.ts, grownRate).
       learned_at = CASE WHEN m.relearn THEN now() ELSE s.learned_at END,
       learned_from_reports = CASE WHEN m.relearn THEN m.from_reports ELSE s.learned_from_reports END,
       stated_rate_per_second = COALESCE(m.stated, s.stated_rate_per_second),
       -- A 429 or Retry-After slows the endpoint itself: no claims for it until then (issue 15).
       throttled_until = CASE WHEN m.throttle > 0 THEN GREATEST(s.throttled_until, now() + m.throttle * interval '1 second') ELSE s.throttled_until END,
       disabled_reason = CASE
         WHEN m.new_status <> 'disabled' THEN NULL
         WHEN m.gone THEN 'gone: the endpoint answered 410 Gone; re-enable the subscription once it is back'
         WHEN m.old_status <> 'disabled' THEN 'circuit open: ' || m.failures || ' consecutive failed attempts over '
           || round(extract(epoch FROM now() - m.since)) || ' s; probing periodically'
         ELSE s.disabled_reason END,
       disabled_at = CASE
         WHEN m.new_status <> 'disabled' THEN NULL
         WHEN m.old_status <> 'disabled' OR m.gone THEN now()
         ELSE s.disabled_at END,
       next_probe_at = CASE
         WHEN m.new_status <> 'disabled' OR m.gone THEN NULL
         WHEN m.old_status <> 'disabled' THEN now() + $7::float8 * interval '1 second'
         ELSE s.next_probe_at END,
       updated_at = now()
     FROM m
     WHERE s.id = m.id
     RETURNING s.id, m.old_status, s.status, CASE WHEN s.throttled_until > now() THEN extract(epoch FROM s.throttled_until) * 1000 END AS held_until
   ),
   -- This relay's view of what each endpoint that answered it 429 accepted ($31: its id; none for a
   -- listener's attempts, which move no endpoint's rate). From health's rows, so the endpoint's row
   -- is locked first, as every writer of both locks them.
   reports AS (
     INSERT INTO outbound_rate_reports (subscription_id, relay_id, accepted_per_second, reported_at)
     SELECT m.id, $31::uuid, m.accepted, now()
     FROM health JOIN m ON m.id = health.id
     -- reported: NULL unless this batch had a 429 and a view of what came before it.
     WHERE $31::uuid IS NOT NULL AND m.reported IS NOT NULL
     ON CONFLICT (subscription_id, relay_id) DO UPDATE
       SET accepted_per_second = excluded.accepted_per_second, reported_at = excluded.reported_at
   ),
   c AS (
     SELECT c.*,
            -- May be logged inline (migration 039): a plain success at the first attempt (no error
            -- class: not one a transformation skipped), not a probe, and the caller allows it
            -- ($30: a listener's attempts get rows, it annotates them).
            $30::bool AND c.status = 'delivered' AND c.result = 'delivered' AND c.error_class IS NULL
              AND c.attempt_number = 1 AND NOT c.probe AS inline
     FROM unnest($8::text[], $9::uuid[], $10::text[], $11::float8[], $12::text[], $13::bool[],
                 $14::int[], $15::text[], $16::int[], $17::text[], $18::int[], $19::text[], $20::bool[], $27::bool[], $28::jsonb[])
       AS c(id, token, status, delay, dead_reason, counted, last_status, error_class, attempt_number, result,
            latency_ms, response_excerpt, probe, limited, request_headers)
   ),
   applied AS (
     UPDATE outbound_deliveries d SET
       status = c.status,
       attempts = d.attempts + CASE WHEN c.counted THEN 1 ELSE 0 END,
       next_attempt_at = CASE WHEN c.status = 'pending' THEN now() + c.delay * interval '1 second' ELSE d.next_attempt_at END,
       lease_token = NULL,
       lease_expires_at = NULL,
       last_status = c.last_status,
       last_error = c.error_class,
       dead_reason = c.dead_reason,
       dead_at = CASE WHEN c.status = 'dead' THEN now() END,
       -- The start of the delivery's run of 429s (decide.ts bounds it); any other answer ends it.
       rate_limited_since = CASE WHEN c.limited AND c.status = 'pending' THEN COALESCE(d.rate_limited_since, now()) END,
       delivered_at = CASE WHEN c.status = 'delivered' THEN now() ELSE d.delivered_at END,
       -- A first attempt that succeeded is logged here, in the row version this writes anyway
       -- (migration 039): no attempt row of its own. First means of the delivery's first claim
       -- ever (claims never go back), so nothing was logged for it before, not even by a lost lease.
       first_attempt_at = CASE WHEN c.inline AND d.claims = 1 THEN now() ELSE d.first_attempt_at END,
       first_attempt_status = CASE WHEN c.inline AND d.claims = 1 THEN c.last_status ELSE d.first_attempt_status END,
       first_attempt_latency_ms = CASE WHEN c.inline AND d.claims = 1 THEN c.latency_ms ELSE d.first_attempt_latency_ms END,
       first_attempt_response_excerpt = CASE WHEN c.inline AND d.claims = 1 THEN c.response_excerpt ELSE d.first_attempt_response_excerpt END,
       first_attempt_request_headers = CASE WHEN c.inline AND d.claims = 1 THEN c.request_headers ELSE d.first_attempt_request_headers END,
       updated_at = now()
     FROM c
     WHERE d.id = c.id AND d.lease_token = c.token AND d.status = 'pending'
     RETURNING d.id, d.subscription_id, d.ordering_key, d.ordering_seq, d.status, c.inline AND d.claims = 1 AS inlined
   ),
   -- Ordered delivery (migration 013): a key's head delivered moves the head on; dead, it blocks
   -- the key (until a replay or a skip); a retry leaves it. Keys locked in order (an enqueue locks
   -- them in that order too). The next delivery is made due by RELEASE_NEXT, a statement of its
   -- own: this one's snapshot predates an enqueue that held the key until just now.
   heads AS (
     SELECT k.subscription_id, k.ordering_key, a.status
     FROM applied a
     JOIN outbound_ordering_keys k ON k.subscription_id = a.subscription_id AND k.ordering_key = a.ordering_key AND k.head_seq = a.ordering_seq
     WHERE a.ordering_seq IS NOT NULL AND a.status <> 'pending'
     ORDER BY k.subscription_id, k.ordering_key
     FOR UPDATE OF k
   ),
   moved AS (
     UPDATE outbound_ordering_keys k SET
       head_seq = CASE WHEN h.status = 'delivered' THEN k.head_seq + 1 ELSE k.head_seq END,
       blocked_at = CASE WHEN h.status = 'dead' THEN now() END,
       updated_at = now()
     FROM heads h
     WHERE k.subscription_id = h.subscription_id AND k.ordering_key = h.ordering_key
     RETURNING k.subscription_id, k.ordering_key, h.status
   ),
   -- Every attempt is logged, a stale one too, unless its delivery is gone (purged by retention
   -- while this lease was long expired): an attempt log row needs a delivery to belong to. One
   -- logged inline by the delivery update needs no row.
   -- led_to: the status this attempt set (migration 038), so what it decided outlives a replay;
   -- request_headers: what it sent, secret values replaced (migration 026, the portal shows it).
   logged AS (
     INSERT INTO outbound_attempt_rows (delivery_id, attempt_number, result, status, latency_ms, error_class, response_excerpt, probe, stale, led_to, request_headers)
     SELECT c.id, c.attempt_number, c.result, c.last_status, c.latency_ms, c.error_class, c.response_excerpt, c.probe, a.inlined IS NULL,
            CASE WHEN a.inlined IS NOT NULL THEN c.status END, c.request_headers
     -- a.inlined: NULL when not applied (stale), else whether the attempt went into the delivery's
     -- row. A join (hashed), not a subquery per row, which would scan applied once per attempt.
     FROM c LEFT JOIN applied a ON a.id = c.id
     -- CASE so the lookup runs only for stale rows, one index probe each (never a hash of the table).
     WHERE CASE WHEN a.inlined IS NOT NULL THEN NOT a.inlined ELSE coalesce((SELECT true FROM outbound_deliveries d WHERE d.id = c.id), false) END
   )
   SELECT 'delivery' AS kind, id, NULL AS old_status, NULL AS status, NULL::float8 AS held_until FROM applied
   UNION ALL
   SELECT 'subscription', id, old_status, status, held_until FROM health
   UNION ALL
   SELECT 'key', subscription_id, ordering_key, status, NULL FROM moved
   UNION ALL
   -- Not applied because cancelled (a deleted subscription's), told from a lost lease; the lookup
   -- runs for rows not applied only (CASE), one index probe each.
   SELECT 'cancelled', c.id, NULL, NULL, NULL FROM c
   WHERE CASE WHEN EXISTS (SELECT 1 FROM applied a WHERE a.id = c.id) THEN false
              ELSE coalesce((SELECT d.status = 'cancelled' FROM outbound_deliveries d WHERE d.id = c.id), false) END`);

/**
 * Makes due the new head of each key given ($1 subscriptions, $2 keys) that is waiting, and wakes
 * the relays ($3). Run after COMPLETE_BATCH (or a skip) in its transaction, which holds the keys'
 * rows: its snapshot, taken after those locks, sees every delivery an enqueue added to them.
 */
export const RELEASE_NEXT = prepared("outbound_release_next", `WITH released AS (
     UPDATE outbound_deliveries d SET next_attempt_at = now(), updated_at = now()
     FROM unnest($1::text[], $2::text[]) AS m(subscription_id, ordering_key)
     JOIN outbound_ordering_keys k ON k.subscription_id = m.subscription_id AND k.ordering_key = m.ordering_key
     WHERE d.subscription_id = k.subscription_id AND d.ordering_key = k.ordering_key AND d.ordering_seq = k.head_seq
       AND d.status = 'pending' AND d.next_attempt_at = 'infinity'
     RETURNING d.id
   ),
   woken AS (SELECT pg_notify($3, '') FROM (SELECT 1 FROM released LIMIT 1) AS any_released)
   SELECT (SELECT count(*) FROM released)::int AS n, (SELECT count(*) FROM woken)::int AS woken`);

/** Makes the given keys' next deliveries due (see RELEASE_NEXT); how many were. */
export async function releaseNext(q: Queryable, keys: readonly { subscriptionId: string; orderingKey: string }[]): Promise<number> {
  if (keys.length === 0) return 0;
  const { rows } = await q.query<{ n: number }>(RELEASE_NEXT, [keys.map((k) => k.subscriptionId), keys.map((k) => k.orderingKey), NOTIFY_CHANNEL]);
  return rows[0]?.n ?? 0;
}

/**
 * Applies a batch of completions with `unnest`, in one statement whatever the batch size: the
 * subscriptions' health, the deliveries and their attempt log.
 * Each delivery update is guarded by its lease token: a relay whose lease was taken over (it ran
 * past the expiry and another relay claimed the delivery) cannot overwrite the newer holder's work.
 * Subscriptions are locked in id order, so concurrent writes (several per relay, and several
 * relays) never deadlock on them; deliveries are disjoint between writes, except a stale one, whose
 * row the UPDATE skips. (Sub-statements of one statement run in no set order, which is why
 * nothing else may wait on the same rows in another order: an operator's resume touches only
 * deliveries no lease holds, and a lease renewal skips rows locked by a write.)
 * `relayId`: the writing relay's id in outbound_relay_holds; its 429s report what it saw the
 * endpoint accept under it (migration 040). Without one nothing is reported.
 */
export async function completeDeliveries(db: Queryable | Database, completions: readonly Completion[], health: HealthPolicy, options: { endpointHealth?: boolean; inlineFirstAttempts?: boolean; relayId?: string } = {}): Promise<CompletionResult> {
  if (completions.length === 0) return { accepted: [], stale: [], cancelled: [], transitions: [], holds: [] };
  // A batch with ordered deliveries moves keys on and then makes their next deliveries due: two
  // statements that must commit together (or a crash between them would leave a key stuck).
  if ("transaction" in db && completions.some((c) => c.delivery.orderingKey != null)) {
    return db.transaction((tx) => completeDeliveries(tx, completions, health, options));
  }
  // `endpointHealth: false`: attempts that went elsewhere than the endpoint (a listener's, on a
  // developer's machine: docs/listen.md) move none of its health, breaker or learnt rate.
  const updates = options.endpointHealth === false ? [] : summariseHealth(completions);
  // `inlineFirstAttempts: false`: every attempt gets a row of its own, none is logged in its
  // delivery's row (migration 039); a listener's, which it annotates after this write.
  // The stale test reads the UPDATE's RETURNING: a delivery not updated had lost its lease. Every
  // attempt is logged, even a stale one (the request did reach, or try to reach, the receiver),
  // unless retention has deleted its delivery meanwhile.
  const { rows } = await db.query<{ kind: "delivery" | "subscription" | "key" | "cancelled"; id: string; old_status: string | null; status: string | null; held_until: number | null }>(
    COMPLETE_BATCH,
    [
      updates.map((u) => u.subscriptionId),
      updates.map((u) => u.succeeded),
      updates.map((u) => u.failures),
      updates.map((u) => u.gone),
      health.disableAfter,
      health.degradeAfter,
      health.probeIntervalSeconds,
      completions.map((c) => c.delivery.id),
      completions.map((c) => c.delivery.leaseToken),
      completions.map((c) => c.decision.status),
      completions.map((c) => c.decision.delaySeconds),
      completions.map((c) => c.decision.deadReason),
      completions.map((c) => c.decision.counted),
      completions.map((c) => c.outcome.status),
      completions.map((c) => clean(c.outcome.errorClass)),
      completions.map((c) => c.delivery.attempts + 1),
      completions.map((c) => c.outcome.result),
      completions.map((c) => Math.max(0, Math.round(c.outcome.latencyMs))),
      completions.map((c) => clean(c.outcome.responseExcerpt)),
      completions.map((c) => c.delivery.probe),
      updates.map((u) => u.throttleSeconds),
      health.openAfterSeconds ?? DEFAULT_HEALTH_POLICY.openAfterSeconds,
      updates.map((u) => u.probeSucceeded),
      updates.map((u) => u.rateLimited),
      updates.map((u) => u.acceptedPerSecond),
      updates.map((u) => u.statedPerSecond),
      completions.map((c) => c.outcome.status === 429),
      completions.map((c) => (c.outcome.requestHeaders ? JSON.stringify(c.outcome.requestHeaders) : null)),
      updates.map((u) => u.limitedShare),
      options.inlineFirstAttempts !== false,
      options.relayId ?? null,
    ],
  );
  const moved = rows.filter((r) => r.kind === "key" && r.status === "delivered").map((r) => ({ subscriptionId: r.id, orderingKey: r.old_status! }));
  await releaseNext(db, moved);
  const accepted = new Set(rows.filter((r) => r.kind === "delivery").map((r) => r.id));
  return {
    accepted: [...accepted],
    stale: completions.map((c) => c.delivery.id).filter((id) => !accepted.has(id)),
    cancelled: rows.filter((r) => r.kind === "cancelled").map((r) => r.id),
    transitions: rows
      .filter((r) => r.kind === "subscription" && r.old_status !== r.status)
      .map((r) => ({ subscriptionId: r.id, from: r.old_status!, to: r.status! })),
    holds: rows.filter((r) => r.kind === "subscription" && r.held_until != null).map((r) => ({ subscriptionId: r.id, until: Number(r.held_until) })),
  };
}
