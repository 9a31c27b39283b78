-- What each relay saw an endpoint accept when a 429 came (issue 28, docs/outbound.md, "Rate-limited
-- receivers"). Several relays each see a share of an endpoint's successes, and that share is
-- uneven (the one that started first took most of the receiver's first burst: 224/s against 40,
-- 44 and 12/s seen with four relays at a 200/s limit); one relay's view times the number of
-- relays read the same limit as anything from 48 to 896/s. The endpoint's accepted rate is the
-- sum of what each relay saw: every relay's 429 reports its view here, and the rate learnt from
-- the first 429 is raised as the other relays' reports arrive in the second after it.
--
-- Written only by a completion carrying a 429 (one row per relay and endpoint, the relay's own,
-- after the endpoint's row is locked: no order of locks to keep with the claims); read by the
-- same; rows of relays long gone are forgotten with the relay holds.
CREATE TABLE outbound_rate_reports (
  subscription_id     text NOT NULL,
  relay_id            uuid NOT NULL,
  accepted_per_second float8 NOT NULL,
  reported_at         timestamptz NOT NULL,
  PRIMARY KEY (subscription_id, relay_id)
);

-- Whether the endpoint's learnt rate came from the relays' reports of what it accepted (its first
-- 429: not paced yet) rather than from its pace less the share refused: only such a rate is raised
-- by reports arriving after it. Nullable without a default: no table rewrite.
ALTER TABLE outbound_subscriptions
  ADD COLUMN learned_from_reports boolean;
