-- Outbound delivery: the transactional outbox.
-- An event is written in the caller's transaction and fanned out to one delivery per matching
-- subscription. Relays claim due deliveries with a lease (token + expiry) and record every attempt.

CREATE TABLE outbound_subscriptions (
  id                   text PRIMARY KEY,                  -- sub_<random>
  url                  text NOT NULL,
  event_types          text[] NOT NULL,                   -- exact (order.paid) or wildcard (order.*, *)
  secrets              text[] NOT NULL,                   -- whsec_<base64>; several during rotation
  description          text,
  max_attempts         int CHECK (max_attempts BETWEEN 1 AND 100), -- NULL: the relay's retry policy
  status               text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'degraded', 'disabled')),
  consecutive_failures int NOT NULL DEFAULT 0,
  disabled_reason      text,
  disabled_at          timestamptz,
  next_probe_at        timestamptz,                       -- disabled by the circuit breaker: when to probe
  last_failure_at      timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);

-- Only disabled subscriptions are ever probed; this keeps the probe lookup tiny.
CREATE INDEX outbound_subscriptions_probe ON outbound_subscriptions (next_probe_at) WHERE status = 'disabled';

CREATE TABLE outbound_events (
  id         text PRIMARY KEY,                            -- the caller's stable event id
  type       text NOT NULL,
  body       text NOT NULL,                               -- exact bytes sent (and signed) on every attempt
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE outbound_deliveries (
  id               text PRIMARY KEY,                      -- <event id>:<subscription id>, sent as webhook-id
  event_id         text NOT NULL REFERENCES outbound_events (id),
  subscription_id  text NOT NULL REFERENCES outbound_subscriptions (id),
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
  attempts         int NOT NULL DEFAULT 0,                -- completed attempts counted toward the maximum
  claims           int NOT NULL DEFAULT 0,                -- times a relay took a lease (crashes included)
  -- The one column of the due predicate: a claim moves it to the lease expiry, so an expired lease
  -- makes the row due again with no extra condition, and the partial index below serves both.
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  lease_token      uuid,                                  -- NULL when no relay holds it
  last_status      int,
  last_error       text,
  dead_reason      text,
  dead_at          timestamptz,
  delivered_at     timestamptz,
  replays          int NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);

-- The due predicate: status = 'pending' AND next_attempt_at <= now().
CREATE INDEX outbound_deliveries_due ON outbound_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbound_deliveries_event ON outbound_deliveries (event_id);
CREATE INDEX outbound_deliveries_subscription ON outbound_deliveries (subscription_id, status);
CREATE INDEX outbound_deliveries_dead ON outbound_deliveries (id) WHERE status = 'dead';

CREATE TABLE outbound_attempts (
  id               bigserial PRIMARY KEY,
  delivery_id      text NOT NULL REFERENCES outbound_deliveries (id),
  attempt_number   int NOT NULL,                          -- 1-based since creation or the last replay
  result           text NOT NULL CHECK (result IN ('delivered', 'retryable', 'permanent', 'gone')),
  status           int,                                   -- HTTP status; NULL for network errors
  latency_ms       int NOT NULL,
  error_class      text,
  response_excerpt text,                                  -- capped by the transport
  probe            boolean NOT NULL DEFAULT false,        -- sent to a disabled endpoint to test recovery
  stale            boolean NOT NULL DEFAULT false,        -- the lease had been lost: outcome not applied
  created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX outbound_attempts_delivery ON outbound_attempts (delivery_id, id);

CREATE TABLE outbound_replays (
  id              bigserial PRIMARY KEY,
  delivery_id     text NOT NULL REFERENCES outbound_deliveries (id),
  previous_reason text,
  requested_by    text,
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX outbound_replays_delivery ON outbound_replays (delivery_id, id);
