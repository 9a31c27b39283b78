-- `delivery.exhausted` operational events (issue 29): which dead letters have been announced, and
-- by which event. A burst of dead letters of one subscription is announced as one event per
-- debounce window with their count, so each dead letter needs its own "announced by" mark (the
-- per-dead-letter alert event is one event per dead letter and cannot be that mark).
-- shared/deliveryExhaustedEvents.ts; docs/operations.md#operational-events.
CREATE TABLE outbound_delivery_exhaustions (
  id               bigserial PRIMARY KEY,
  delivery_id      text NOT NULL,
  -- The delivery's replay count when it died: a replayed delivery that dies again is a new dead letter.
  replays          integer NOT NULL,
  subscription_id  text NOT NULL,
  application_id   text NOT NULL,
  reason           text,
  dead_at          timestamptz NOT NULL,
  -- Set when announced: the `delivery.exhausted` event that counted it (NULL: waiting for its
  -- subscription's debounce window to pass).
  event_id         text,
  raised_at        timestamptz,
  UNIQUE (delivery_id, replays)
);
-- The dead letters waiting to be announced, and the debounce look-up (last event per subscription).
CREATE INDEX outbound_delivery_exhaustions_waiting ON outbound_delivery_exhaustions (subscription_id, id) WHERE event_id IS NULL;
CREATE INDEX outbound_delivery_exhaustions_raised ON outbound_delivery_exhaustions (subscription_id, raised_at) WHERE event_id IS NOT NULL;
