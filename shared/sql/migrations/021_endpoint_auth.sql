-- Endpoint authentication (issue 29, docs/endpointAuth.md): a subscription may authenticate to its
-- endpoint with OAuth 2.0 client credentials, a TLS client certificate, or HTTP Basic.
-- `auth` holds the configuration; its secret parts (client secret, private key, password) are
-- envelopes (enc.v1.…, shared/crypto/envelope.ts) bound to the subscription, like signing secrets;
-- the rest (token URL, client id, certificate) is readable. NULL: no authentication.
ALTER TABLE outbound_subscriptions ADD COLUMN auth jsonb;

-- OAuth 2.0 access tokens, one per subscription, shared by every relay on this database so four
-- relays fetch one token per expiry, not one each (shared/outbound/endpointAuth/tokenCache.ts).
-- `token` is sealed like a secret. `auth_version` names the configuration the token was fetched
-- with (a new client secret makes the old token unusable here). `generation` counts fetches: a
-- relay told 401 with generation n invalidates n only, so several relays told 401 together cause
-- one refresh. `fetching_until` is the fetch lease: the one relay holding it asks the token
-- endpoint, the others wait for its result. `failed_*` keep a token endpoint's failure for a few
-- seconds, so a down endpoint is not asked once per delivery.
-- No foreign key, so the outbound tables can still be emptied one by one; a row of a deleted
-- subscription is never read again (at most one per subscription).
CREATE TABLE outbound_auth_tokens (
  subscription_id  text PRIMARY KEY,
  auth_version     text NOT NULL,
  generation       bigint NOT NULL DEFAULT 0,
  token            text,
  expires_at       timestamptz,
  refresh_at       timestamptz,
  fetching_until   timestamptz,
  failed_until     timestamptz,
  failure_class    text,
  failure          text,
  updated_at       timestamptz NOT NULL DEFAULT now()
);

-- `auth.failing` operational events (shared/authEvents.ts): a relay notes here when a
-- subscription's credentials fail (token endpoint down or refusing, client certificate expired)
-- or are about to (a client certificate within 30 days of expiry); the alert poller turns each
-- row into an event, debounced per subscription and cause, as for outbound_health_transitions.
CREATE TABLE outbound_auth_failures (
  id               bigserial PRIMARY KEY,
  subscription_id  text NOT NULL,
  error_class      text NOT NULL,
  detail           text,
  at               timestamptz NOT NULL DEFAULT now(),
  handled_at       timestamptz,
  event_id         text
);
CREATE INDEX outbound_auth_failures_unhandled ON outbound_auth_failures (id) WHERE handled_at IS NULL;
CREATE INDEX outbound_auth_failures_raised ON outbound_auth_failures (subscription_id, error_class, at) WHERE event_id IS NOT NULL;
