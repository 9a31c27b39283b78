-- The customer portal (issue 32, docs/portal.md).
--
-- A portal link opens the portal once, for one application: the operator hands it to a customer.
-- Only the SHA-256 of its token is kept (as for API keys, 256 random bits need no slow hash); the
-- first exchange sets used_at, so the same token never opens a second session. The session it
-- opened ends at the link's expires_at, and is revoked with the link.
CREATE TABLE portal_links (
  id              text PRIMARY KEY,                       -- pl_<16 hex>, the visible part of the token
  token_sha256    bytea NOT NULL,
  application_id  text NOT NULL REFERENCES outbound_applications (id),
  access          text NOT NULL CHECK (access IN ('write', 'read')),
  return_url      text,
  expires_at      timestamptz NOT NULL,
  created_by      text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  used_at         timestamptz,
  revoked_at      timestamptz,
  revoked_by      text
);
CREATE INDEX portal_links_application ON portal_links (application_id, created_at);

-- A portal session: the cookie's credential, scoped to its link's application and access, until
-- expires_at. Its id is the actor the audit log records for what the customer changed.
CREATE TABLE portal_sessions (
  id              text PRIMARY KEY,                       -- ps_<16 hex>, the visible part of the cookie
  secret_sha256   bytea NOT NULL,
  link_id         text NOT NULL UNIQUE REFERENCES portal_links (id),
  application_id  text NOT NULL REFERENCES outbound_applications (id),
  access          text NOT NULL CHECK (access IN ('write', 'read')),
  expires_at      timestamptz NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  revoked_at      timestamptz,
  revoked_by      text
);

-- Per application: the origins that may frame its portal (besides PORTAL_FRAME_ANCESTORS) and its
-- light theme. No row: nothing beyond the global setting, the default look.
CREATE TABLE portal_settings (
  application_id   text PRIMARY KEY REFERENCES outbound_applications (id),
  frame_ancestors  text[] NOT NULL DEFAULT '{}',
  theme_name       text,
  theme_logo_url   text,
  theme_accent     text,
  updated_at       timestamptz NOT NULL DEFAULT now()
);

-- What each attempt sent (the portal shows it): the request headers, the values of the
-- subscription's custom and authentication headers replaced (they are stored encrypted, and an
-- Authorization header is a credential). Written by the relay in the same INSERT as the rest of
-- the attempt; NULL for attempts logged before this migration. Nullable, no default: no rewrite.
ALTER TABLE outbound_attempts ADD COLUMN request_headers jsonb;
