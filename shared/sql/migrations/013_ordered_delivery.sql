-- Ordered delivery (issue 15): an event may carry an ordering key (e.g. its aggregate's id); for a
-- subscription created with `ordered`, the deliveries of one key are attempted one at a time, in
-- enqueue order, each waiting until the one before is delivered (or, dead, skipped by an operator).
--
-- How, without a claim ever looking at waiting keys: only a key's *head* is ever due. The others
-- are pending with next_attempt_at = 'infinity', so they sit at the far end of the claim's
-- due-by-subscription index (migration 011) and no claim steps over them, however many keys wait.
-- The head moves on at its completion (delivered) or at an operator's skip, which make the next
-- delivery of the key due; a retry, a lease running out or a dead letter leave the head where it is.

-- The key as the caller gave it (NULL: none); events without one are never ordered.
ALTER TABLE outbound_events ADD COLUMN ordering_key text CHECK (length(ordering_key) BETWEEN 1 AND 200);

-- Set only for deliveries of an ordered subscription whose event has a key: the key, and the
-- delivery's place in it (1, 2, … per subscription and key, in enqueue order). No default: quick on
-- a big table.
ALTER TABLE outbound_deliveries
  ADD COLUMN ordering_key text,
  ADD COLUMN ordering_seq bigint;

-- One row per ordered subscription and key: last_seq, the last place handed out (enqueue takes the
-- next one under this row's lock, so places follow commit order); head_seq, the place allowed to
-- go (its delivery is due, in flight, retrying or dead). The key is idle when head_seq > last_seq.
-- blocked_at: the head is a dead letter (since then); the key waits for its replay or a skip.
CREATE TABLE outbound_ordering_keys (
  subscription_id text NOT NULL,
  ordering_key    text NOT NULL,
  last_seq        bigint NOT NULL,
  head_seq        bigint NOT NULL,
  blocked_at      timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (subscription_id, ordering_key)
);

-- The keys that have work (the operator's list of waiting and blocked keys), in key order.
CREATE INDEX outbound_ordering_keys_active ON outbound_ordering_keys (subscription_id, ordering_key) WHERE head_seq <= last_seq;

-- A key's deliveries by place: finding the next one when the head moves on. Unique: two
-- deliveries of one key never share a place. Only ordered deliveries are in it; a claim writes
-- none of these columns (claims stay HOT).
CREATE UNIQUE INDEX outbound_deliveries_ordering ON outbound_deliveries (subscription_id, ordering_key, ordering_seq) WHERE ordering_seq IS NOT NULL;
