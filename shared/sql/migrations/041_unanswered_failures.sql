-- The endpoint's consecutive failed attempts that got no HTTP answer at all (timeouts, refused or
-- broken connections), after its last answer of any status (issue 28, docs/outbound.md, flow
-- control). From 3 on (FAILING_ONE_AT_A_TIME_AFTER, sql/claimDeliveries.ts) the endpoint gets one
-- attempt at a time across every relay until it answers: each relay's adaptive limit drops to 1 at
-- a timeout, but each relay learns that on its own, and four relays kept 400 attempts open at 100
-- hanging endpoints. An endpoint that answers, even with errors, frees its relays at once and is
-- left to the breaker and the backoff. A constant default: no table rewrite.
ALTER TABLE outbound_subscriptions
  ADD COLUMN consecutive_unanswered int NOT NULL DEFAULT 0;
