-- The admin dashboard counts the attempts of the last minutes (shared/admin/stats.ts); without an
-- index on time that is a scan of the whole attempt log, which only grows. Attempts are appended in
-- time order, so a BRIN index (one small summary per range of pages) finds the recent ones, and it
-- costs the relay's hot path almost nothing: new pages are summarised later, not on each insert.
CREATE INDEX outbound_attempts_created ON outbound_attempts USING brin (created_at);
