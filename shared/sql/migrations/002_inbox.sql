-- The idempotent inbox: one row per inbound webhook, unique by (partner, partner event id).
-- The raw bytes are kept exactly as received, so a replay or an investigation sees what the
-- partner signed. The processor moves a row through: pending → processed | deferred | failed
-- → … → processed | quarantined. Timestamps come from the application clock (tests inject one).
CREATE TABLE inbox_entries (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- Arrival order: entries due at the same instant are claimed first-in, first-out.
  seq                bigint GENERATED ALWAYS AS IDENTITY,
  partner_name       text NOT NULL CHECK (length(partner_name) BETWEEN 1 AND 64),
  partner_event_id   text NOT NULL CHECK (length(partner_event_id) BETWEEN 1 AND 255),
  event_type         text,
  payload            bytea NOT NULL,
  payload_sha256     text NOT NULL,
  signature_verified boolean NOT NULL,
  received_at        timestamptz NOT NULL,
  status             text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'deferred', 'failed', 'processed', 'quarantined')),
  -- When the processor may next look at the row. While a lease is held it is the lease expiry,
  -- so the claim of a crashed worker falls due again by itself.
  next_attempt_at    timestamptz NOT NULL,
  lease_token        uuid,
  attempts           integer NOT NULL DEFAULT 0,  -- claims, whatever their outcome
  failures           integer NOT NULL DEFAULT 0,  -- errors; indexes the retry schedule
  deferrals          integer NOT NULL DEFAULT 0,
  defer_deadline_at  timestamptz,                 -- set at the first deferral
  entity_key         text,                        -- e.g. 'order:42', known once processed once
  outcome            text,                        -- applied | duplicate | stale | rejected | …
  last_error         text,
  quarantine_reason  text,
  processed_at       timestamptz,
  -- Same (partner, id) delivered again with different bytes: flagged here and kept in
  -- inbox_payload_conflicts, never applied.
  payload_mismatches integer NOT NULL DEFAULT 0,
  replays            integer NOT NULL DEFAULT 0,
  UNIQUE (partner_name, partner_event_id)
);

-- The processor's claim query reads only due rows, oldest first.
CREATE INDEX inbox_entries_due ON inbox_entries (next_attempt_at, seq)
  WHERE status IN ('pending', 'deferred', 'failed');
-- Applying a transition wakes the entries deferred on the same entity.
CREATE INDEX inbox_entries_deferred_entity ON inbox_entries (entity_key)
  WHERE status = 'deferred';
CREATE INDEX inbox_entries_status_received ON inbox_entries (status, received_at DESC);

-- Bytes that arrived under a known (partner, event id) with a different hash. One row per
-- distinct payload, counting how often it came, so a retry storm cannot grow the table.
CREATE TABLE inbox_payload_conflicts (
  entry_id         uuid NOT NULL REFERENCES inbox_entries (id) ON DELETE CASCADE,
  payload_sha256   text NOT NULL,
  payload          bytea NOT NULL,
  first_seen_at    timestamptz NOT NULL,
  last_seen_at     timestamptz NOT NULL,
  deliveries       integer NOT NULL DEFAULT 1,
  PRIMARY KEY (entry_id, payload_sha256)
);

-- Every replay, single or bulk, with what the entry looked like before it.
CREATE TABLE inbox_replays (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  entry_id         uuid NOT NULL REFERENCES inbox_entries (id) ON DELETE CASCADE,
  requested_at     timestamptz NOT NULL,
  requested_by     text NOT NULL,
  previous_status  text NOT NULL,
  previous_reason  text
);
CREATE INDEX inbox_replays_entry ON inbox_replays (entry_id);
