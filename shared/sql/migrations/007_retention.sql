-- Retention (shared/retention/outbox.ts) finds finished deliveries and events by age. Both tables
-- are appended in time order, so a BRIN index (one small summary per range of pages) finds the old
-- ones without a scan of everything kept, and costs the relay almost nothing: `created_at` never
-- changes, so claims stay HOT updates, and new pages are summarised later, not on each insert.
CREATE INDEX outbound_deliveries_created ON outbound_deliveries USING brin (created_at);
CREATE INDEX outbound_events_created ON outbound_events USING brin (created_at);
