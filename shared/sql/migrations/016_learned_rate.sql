-- Flow control that converges on a receiver's accepted rate (issue 28, docs/outbound.md).
--
-- learned_rate_per_second, learned_at: the rate the endpoint accepted when it last answered 429
--   (estimated from the successes per second before it, at most once a second), and when. The
--   claim paces the endpoint at that rate grown by RATE_PROBE_GROWTH per second since learned_at
--   (probing upwards slowly); the next 429 sets it again. NULL: never rate-limited, not paced.
-- stated_rate_per_second: the quota the receiver states in RateLimit-Policy (q / w); the claim
--   paces at most at RATE_STATED_SHARE of it. NULL: it stated none.
-- rate_limited_since (deliveries): when the delivery's current run of 429 answers started. Those
--   attempts do not count toward its maximum; past the retry policy's rateLimitedForSeconds of
--   them, the delivery is dead-lettered. NULL: its last answer was not a 429.
-- All nullable without defaults: no table rewrite.
ALTER TABLE outbound_subscriptions
  ADD COLUMN learned_rate_per_second float8,
  ADD COLUMN learned_at timestamptz,
  ADD COLUMN stated_rate_per_second float8;
ALTER TABLE outbound_deliveries
  ADD COLUMN rate_limited_since timestamptz;
