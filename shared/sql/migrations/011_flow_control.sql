-- Endpoint isolation and flow control (issue 15): per-subscription limits, fair claims across
-- relays, and the state the claim reads to enforce them.

-- max_in_flight: most deliveries of the subscription leased at once, across every relay (NULL: the
--   relays' OUTBOUND_MAX_IN_FLIGHT). rate_limit_per_second: most attempts started per second, across
--   relays (NULL: none). attempt_timeout_ms: this endpoint's attempt deadline (NULL: OUTBOUND_TIMEOUT_MS,
--   which also bounds it). ordered: set at creation; deliveries with one ordering key go one at a time.
-- rate_next_at: the rate limiter's clock (GCRA's "theoretical arrival time"): the earliest moment the
--   next attempt may start; each claim moves it on by 1 / rate per delivery taken.
-- throttled_until: a 429 or Retry-After slows the whole endpoint, not only the delivery that got it.
-- concurrency_limit: the adaptive limit (AIMD) the completions write; NULL: not lowered (= max_in_flight).
-- failing_since: start of the current run of failures, for the breaker's time window.
-- Added without defaults (but `ordered`, a constant default: no rewrite either), so this is quick on
-- a big table.
ALTER TABLE outbound_subscriptions
  ADD COLUMN max_in_flight int CHECK (max_in_flight BETWEEN 1 AND 10000),
  ADD COLUMN rate_limit_per_second float8 CHECK (rate_limit_per_second > 0 AND rate_limit_per_second <= 10000),
  ADD COLUMN attempt_timeout_ms int CHECK (attempt_timeout_ms BETWEEN 100 AND 120000),
  ADD COLUMN ordered boolean NOT NULL DEFAULT false,
  ADD COLUMN rate_next_at timestamptz,
  ADD COLUMN throttled_until timestamptz,
  ADD COLUMN concurrency_limit float8,
  ADD COLUMN failing_since timestamptz;

-- How many deliveries each live relay holds per subscription: what the claim counts against
-- max_in_flight. A relay adds what it claims (in the claim's transaction) and takes off what it has
-- written or released at its next claim; a row whose relay died runs out with its leases
-- (expires_at follows them), so a crash never leaves a subscription counted full. Counting the
-- leased rows themselves instead would walk a subscription's whole due backlog on every claim.
CREATE TABLE outbound_relay_holds (
  subscription_id text NOT NULL,
  relay_id        uuid NOT NULL,
  held            int NOT NULL,
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (subscription_id, relay_id)
);

-- A claim walks each subscription's due deliveries, oldest first, taking its fair share. This
-- replaces the time-ordered due index of migration 001, which only the old claim (oldest due first,
-- whoever they belong to) used: while it existed, the planner preferred walking it in time order,
-- filtering on the subscription, which steps over every other subscription's backlog (a hanging
-- endpoint's thousands) on each claim. Only pending rows are in it (a delivered row leaves it), and
-- a claim writes no column it covers (claims stay HOT). One index entry per delivery, as before.
CREATE INDEX outbound_deliveries_due_by_subscription ON outbound_deliveries (subscription_id, next_attempt_at) WHERE status = 'pending';
DROP INDEX outbound_deliveries_due;
