-- The management API (issue 13): subscriptions are edited, paused, resumed and deleted; custom
-- headers go with every attempt; deliveries can be cancelled, and made again by an operator.

-- headers: sent with every attempt of the subscription's deliveries (validated in
-- shared/outbound/subscriptionHeaders.ts; never webhook-*, host, content-length, hop-by-hop).
-- paused_at: set while an operator has paused it. Its deliveries are kept and wait (the claim skips
-- paused subscriptions); health (status) is a separate matter, still written by completions.
-- deleted_at: a deleted subscription is kept so its deliveries stay readable history; it gets no
-- new deliveries, and its pending ones were cancelled when it was deleted.
ALTER TABLE outbound_subscriptions
  ADD COLUMN headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  ADD COLUMN paused_at timestamptz,
  ADD COLUMN deleted_at timestamptz;

-- cancelled: a pending delivery whose subscription was deleted. It is never attempted again.
-- NOT VALID then VALIDATE: the check of existing rows does not block writes meanwhile.
ALTER TABLE outbound_deliveries DROP CONSTRAINT outbound_deliveries_status_check;
ALTER TABLE outbound_deliveries ADD CONSTRAINT outbound_deliveries_status_check
  CHECK (status IN ('pending', 'delivered', 'dead', 'cancelled')) NOT VALID;
ALTER TABLE outbound_deliveries VALIDATE CONSTRAINT outbound_deliveries_status_check;

-- origin: NULL for the fan-out of an enqueued event; 'resend', 'test' or 'backfill' for a delivery
-- an operator asked for, with who asked. Added without a default: no rewrite, and no cost to the
-- relay's hot path (no index covers them).
ALTER TABLE outbound_deliveries
  ADD COLUMN cancelled_at timestamptz,
  ADD COLUMN origin text CHECK (origin IN ('resend', 'test', 'backfill')),
  ADD COLUMN requested_by text;

-- GET /events lists the newest first and pages by (created_at, id); the BRIN index of migration
-- 007 finds old events for retention but gives no order. One more index entry per enqueued event.
CREATE INDEX outbound_events_listed ON outbound_events (created_at, id);
