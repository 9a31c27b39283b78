-- Issue 30: content filters and transformations on subscriptions, and the event catalogue.
-- docs/filters.md, docs/catalogue.md, docs/transformations.md.

-- filter: the subscription's content filter as given (shared/outbound/filters.ts), shown back;
-- filter_path: the same compiled to a jsonpath predicate, which enqueue's fan-out evaluates on the
-- event's body in its statement (a filtered-out event gets no delivery row). Both NULL: no filter,
-- and the fan-out pays one NULL test. Added without defaults: no rewrite.
-- transformation: JavaScript source of `(event) => ({ body, headers?, url? } | null)`, run by the
-- relay in a WebAssembly sandbox before each attempt (shared/outbound/transformations.ts).
ALTER TABLE outbound_subscriptions
  ADD COLUMN filter jsonb,
  ADD COLUMN filter_path jsonpath,
  ADD COLUMN transformation text,
  ADD CONSTRAINT outbound_subscriptions_filter_compiled CHECK ((filter IS NULL) = (filter_path IS NULL));

-- The catalogue: the event types an application publishes. schema: a JSON Schema (2020-12) of the
-- events' data; version: bumped whenever the schema changes (validators are compiled once per
-- version); validation: what enqueue does with data the schema refuses (off: nothing; warn: the
-- event is accepted and its errors kept in outbound_events.schema_errors; enforce: refused, nothing
-- written). No foreign key to applications (as events, migration 014): deleting an application
-- leaves its catalogue as history.
CREATE TABLE outbound_event_types (
  application_id  text NOT NULL,
  name            text NOT NULL,
  description     text,
  schema          jsonb,
  examples        jsonb NOT NULL DEFAULT '[]'::jsonb,
  version         int NOT NULL DEFAULT 1,
  deprecated      boolean NOT NULL DEFAULT false,
  validation      text NOT NULL DEFAULT 'off' CHECK (validation IN ('off', 'warn', 'enforce')),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (application_id, name)
);

-- strict: subscriptions of the application must name types (or patterns) the catalogue has.
CREATE TABLE outbound_catalogue_settings (
  application_id  text PRIMARY KEY,
  strict          boolean NOT NULL DEFAULT false,
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- One row: a token changed by every change to the catalogue's validation (any application). An
-- enqueuer keeps the validators of the token it last read; its statement writes nothing when the
-- token moved meanwhile, so it reloads them and validates again (shared/outbound/catalogue.ts).
CREATE TABLE outbound_catalogue_revision (
  only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  token     text NOT NULL
);
-- Random, so two databases never share a token (an enqueuer may talk to several).
INSERT INTO outbound_catalogue_revision (token) VALUES (gen_random_uuid()::text);

-- schema_errors: for an event accepted under `warn`, the JSON Schema errors of its data. NULL
-- otherwise (no rewrite, nothing stored for valid events).
ALTER TABLE outbound_events ADD COLUMN schema_errors jsonb;
