-- Inbound for any domain (issue 16): the reconciler keeps every machine's entity state and
-- transition log here, so a user's machine (defineMachine in their handler module) needs no table
-- of its own. Events no handler takes are recorded as `ignored`: settled, visible, replayable.

-- One row per entity of a machine, e.g. ('order', 'o-1', 'paid').
CREATE TABLE inbound_entities (
  machine     text NOT NULL CHECK (length(machine) BETWEEN 1 AND 64),
  entity_id   text NOT NULL CHECK (length(entity_id) BETWEEN 1 AND 255),
  state       text NOT NULL CHECK (length(state) BETWEEN 1 AND 128),
  version     integer NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (machine, entity_id)
);

-- Every decision the reconciler took for an entity: applied transitions and recorded no-ops.
CREATE TABLE inbound_transitions (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  machine         text NOT NULL,
  entity_id       text NOT NULL,
  inbox_entry_id  uuid,
  event_type      text NOT NULL,
  outcome         text NOT NULL CHECK (outcome IN ('applied', 'duplicate', 'stale')),
  from_state      text,
  to_state        text,
  at              timestamptz NOT NULL
);
CREATE INDEX inbound_transitions_entity ON inbound_transitions (machine, entity_id, id);

-- The sample order domain moved out of the core (examples/orders): its rows become entities of
-- the `order` machine, with their log; its own tables go.
INSERT INTO inbound_entities (machine, entity_id, state, version, created_at, updated_at)
  SELECT 'order', id, state, version, created_at, updated_at FROM orders;
INSERT INTO inbound_transitions (machine, entity_id, inbox_entry_id, event_type, outcome, from_state, to_state, at)
  SELECT 'order', order_id, inbox_entry_id, event_type, outcome, from_state, to_state, at FROM order_transitions ORDER BY id;
DROP TABLE order_transitions;
DROP TABLE orders;

-- `ignored`: no handler takes the event (see docs/inbound.md); settled like processed.
ALTER TABLE inbox_entries DROP CONSTRAINT inbox_entries_status_check;
ALTER TABLE inbox_entries ADD CONSTRAINT inbox_entries_status_check
  CHECK (status IN ('pending', 'deferred', 'failed', 'processed', 'quarantined', 'ignored'));
