-- Tenants and access (issue 17): applications own subscriptions and events (deliveries belong to
-- their subscription's application); API keys, stored hashed, each scoped; an audit log of every
-- management change. docs/tenancy.md.

-- An application: one customer of the operator (Svix's model). `app_default` exists from the
-- start and takes every existing row, so single-tenant use stays as it was: calls that name no
-- application act on it. deleted_at: a deleted application is kept (its events and deliveries stay
-- readable history); it gets no new subscriptions or events.
CREATE TABLE outbound_applications (
  id          text PRIMARY KEY,                           -- app_<random>, or app_default
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  deleted_at  timestamptz
);
INSERT INTO outbound_applications (id, name) VALUES ('app_default', 'default');

-- Existing subscriptions move to the default application: a constant default, so no table rewrite.
-- The foreign key is checked only when a subscription is created or moved (never by the relay's
-- updates, which leave this column alone).
ALTER TABLE outbound_subscriptions
  ADD COLUMN application_id text NOT NULL DEFAULT 'app_default' REFERENCES outbound_applications (id);
-- Fan-out and the application's lists look subscriptions up by application.
CREATE INDEX outbound_subscriptions_application ON outbound_subscriptions (application_id, id) WHERE deleted_at IS NULL;

-- Events: the application they were enqueued for (fan-out reaches only its subscriptions).
-- No foreign key: it would cost every enqueue a key-share row lock on the application's row (a
-- multixact when enqueuers run concurrently); enqueue checks the application in its statement.
-- No index either (one more entry per event): an application's event list walks the time index.
ALTER TABLE outbound_events ADD COLUMN application_id text NOT NULL DEFAULT 'app_default';

-- API keys. The key itself is shown once, at creation; only its SHA-256 is kept. application_id
-- NULL: an operator key (every application); access 'read' changes nothing.
CREATE TABLE management_api_keys (
  id              text PRIMARY KEY,                       -- key_<16 hex>, the visible part of the key
  secret_sha256   bytea NOT NULL,
  access          text NOT NULL CHECK (access IN ('write', 'read')),
  application_id  text REFERENCES outbound_applications (id),
  description     text,
  created_by      text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  revoked_at      timestamptz,
  revoked_by      text
);

-- Every management change (each non-GET operation that succeeded): who (a key id, or `bootstrap`
-- for ADMIN_TOKEN), what (operation id, resource id, application), when. Kept; never purged.
CREATE TABLE management_audit_log (
  id              bigserial PRIMARY KEY,
  at              timestamptz NOT NULL DEFAULT now(),
  actor           text NOT NULL,
  operation       text NOT NULL,
  method          text NOT NULL,
  path            text NOT NULL,
  resource_id     text,
  application_id  text,
  status          int NOT NULL
);
