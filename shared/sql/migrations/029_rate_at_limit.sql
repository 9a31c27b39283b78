-- Recovering quickly to just below the rate a receiver limited us at (issue 28, docs/outbound.md).
--
-- limited_at_rate_per_second: the rate the endpoint was accepting when its last 429 came (before
--   the decrease to learned_rate_per_second). The claim's pace climbs back quickly to
--   RATE_RECOVER_SHARE of it, then probes upwards slowly as before (acceptedRate.ts): after one
--   429 the backlog drains at close to the limit within a second instead of climbing 2 % a second.
--   NULL: never rate-limited, or learnt before this column (the slow climb alone).
-- Nullable without a default: no table rewrite.
ALTER TABLE outbound_subscriptions
  ADD COLUMN limited_at_rate_per_second float8;
