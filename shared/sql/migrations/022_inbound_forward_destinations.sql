-- Inbound forwarding to several destinations (issue 30 item 4, docs/inbound-partners.md): a
-- forwarding partner's events fan out by content. Each destination is an outbound subscription of
-- the platform's application (url, secrets, filter, transformation, health, dead letters, replay
-- are the outbound path's); this table names it within its partner. `default` is the destination
-- of the partner's `forward.url` in PARTNERS (its subscription `fwd_<partner>`, as before); the
-- others are managed through the API. No foreign key: a deleted subscription's row is removed with
-- it by the API, and a row whose subscription is deleted is never read (the join skips it).
CREATE TABLE inbound_forward_destinations (
  partner          text NOT NULL CHECK (length(partner) BETWEEN 1 AND 64),
  name             text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
  subscription_id  text NOT NULL UNIQUE,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (partner, name)
);

-- Forwarding that existed before this migration keeps working: each partner's `fwd_<partner>`
-- subscription is its `default` destination.
INSERT INTO inbound_forward_destinations (partner, name, subscription_id)
SELECT substr(id, 5), 'default', id FROM outbound_subscriptions
WHERE id LIKE 'fwd\_%' AND application_id = 'app_platform' AND deleted_at IS NULL AND length(id) BETWEEN 5 AND 68;

-- What forwarding did with an entry, one element per destination at the time it was stored:
-- {"destination", "subscriptionId", "outcome": "enqueued" | "skipped", "deliveryId"?, "reason"?}.
-- A destination whose filter does not match is skipped visibly here, never silently. NULL: the
-- partner did not forward (no rewrite of existing rows).
ALTER TABLE inbox_entries ADD COLUMN forwarding jsonb;
