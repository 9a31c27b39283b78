-- Deliveries the relay put back unsent because their subscription's secrets do not decrypt with its
-- ENCRYPTION_KEYS (issue 27, item 3): the relay writes why into last_error ('secrets unreadable: …',
-- shared/outbound/sql/deferUnsent.ts), and GET /healthz reports them (shared/outbound/unsent.ts).
-- This partial index holds only those rows, so the health check reads a handful of entries, never
-- the deliveries table; a delivery leaves it when it is attempted (last_error rewritten) or cancelled.
CREATE INDEX outbound_deliveries_unsent_idx ON outbound_deliveries (subscription_id)
  WHERE status = 'pending' AND last_error LIKE 'secrets unreadable:%';
