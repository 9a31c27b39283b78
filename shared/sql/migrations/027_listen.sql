-- `webhooks listen` (issue 32, docs/listen.md): a developer's machine pulls a subscription's
-- deliveries from the management API and forwards them to a local receiver.
--
-- A listener is a session of one `webhooks listen`, kept alive by its heartbeats (every third of
-- its lease); its id is also the lease token of every delivery it holds, so the deliveries of a
-- listener that stops are released by that token, and those of one that vanished (SIGKILL, a
-- laptop closed) come back when their leases run out. Rows of listeners long expired are deleted
-- when the next listener of the subscription attaches.
CREATE TABLE outbound_listeners (
  id               uuid PRIMARY KEY,
  subscription_id  text NOT NULL REFERENCES outbound_subscriptions (id) ON DELETE CASCADE,
  -- What the developer said it forwards to (shown, never called by the platform).
  forward_to       text,
  -- The lease of the deliveries it holds, and how long it lives without a heartbeat.
  lease_seconds    integer NOT NULL CHECK (lease_seconds BETWEEN 5 AND 300),
  created_by       text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  expires_at       timestamptz NOT NULL
);
CREATE INDEX outbound_listeners_by_subscription ON outbound_listeners (subscription_id, expires_at);

-- While a listener is attached, the relays leave the subscription alone (the claim skips it):
-- the latest expiry of its live listeners, kept by attach, heartbeat and detach. A column of the
-- row the claim already reads, so the relay's claim pays one comparison for it; when the last
-- listener vanishes without a word it simply passes, and the relays resume.
ALTER TABLE outbound_subscriptions ADD COLUMN listened_until timestamptz;

-- Attempts a listener made (its answer, forwarded by the CLI): which listener, and the local
-- receiver's response headers (an excerpt). NULL for the relay's attempts.
ALTER TABLE outbound_attempts
  ADD COLUMN listener_id uuid,
  ADD COLUMN response_headers jsonb;
