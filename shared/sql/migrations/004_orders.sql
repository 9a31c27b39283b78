-- The sample domain behind the inbox: orders moved by partner events through the state machine
-- in shared/inbound/orders.ts (created → paid → shipped → delivered; cancel from created or paid).
CREATE TABLE orders (
  id            text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 128),
  state         text NOT NULL CHECK (state IN ('created', 'paid', 'shipped', 'delivered', 'cancelled')),
  amount_cents  bigint CHECK (amount_cents >= 0),
  currency      text CHECK (currency ~ '^[A-Z]{3}$'),
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  version       integer NOT NULL DEFAULT 1
);

-- Every decision the reconciler took for an order: applied transitions and recorded no-ops.
CREATE TABLE order_transitions (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  order_id        text NOT NULL,
  inbox_entry_id  uuid,
  event_type      text NOT NULL,
  outcome         text NOT NULL CHECK (outcome IN ('applied', 'duplicate', 'stale')),
  from_state      text,
  to_state        text,
  at              timestamptz NOT NULL
);
CREATE INDEX order_transitions_order ON order_transitions (order_id, id);
