-- A delivery's first attempt, when it succeeded, is kept on the delivery's own row instead of in
-- a row of its own (issue 34 item 1). Most deliveries succeed at their first attempt, and the
-- completion writes the delivery's row anyway: logging that attempt in the same row version saves
-- one heap tuple and one index entry per delivery on the relay's hottest statement (measured in
-- bench/outbound). Every other attempt (a failure, a retry, a probe, a stale one, a listener's)
-- is still a row of its own.
--
-- The attempt log keeps its name and its columns: `outbound_attempts` is now a view, the rows
-- table's attempts and the inline first attempts together, so what reads it (the API, the admin
-- page, the portal, an operator's own SQL) sees every attempt as before. Inline attempts have id
-- 0 (they come first in their delivery's log; row ids start at 1). Writes go to
-- `outbound_attempt_rows`.
--
-- first_attempt_at: when the inline attempt was made (the completion's time, as created_at was);
-- NULL when the delivery has no inline attempt. The other columns are that attempt's HTTP status,
-- latency, response excerpt and request headers. Nullable without defaults: no table rewrite.
ALTER TABLE outbound_attempts RENAME TO outbound_attempt_rows;

ALTER TABLE outbound_deliveries
  ADD COLUMN first_attempt_at timestamptz,
  ADD COLUMN first_attempt_status int,
  ADD COLUMN first_attempt_latency_ms int,
  ADD COLUMN first_attempt_response_excerpt text,
  ADD COLUMN first_attempt_request_headers jsonb;

-- The delivery statistics read attempts by time: inline ones by this. BRIN, as for created_at
-- (migration 007): written in time order, a few pages per range, cheap to keep; no claim changes
-- the column, so claims stay HOT updates.
CREATE INDEX outbound_deliveries_first_attempt ON outbound_deliveries USING brin (first_attempt_at);

CREATE VIEW outbound_attempts AS
  SELECT id, delivery_id, attempt_number, result, status, latency_ms, error_class, response_excerpt,
         probe, stale, created_at, listener_id, response_headers, request_headers, led_to
  FROM outbound_attempt_rows
  UNION ALL
  SELECT 0::bigint, d.id, 1, 'delivered', d.first_attempt_status, d.first_attempt_latency_ms, NULL::text,
         d.first_attempt_response_excerpt, false, false, d.first_attempt_at, NULL::uuid, NULL::jsonb,
         d.first_attempt_request_headers, 'delivered'
  FROM outbound_deliveries d
  WHERE d.first_attempt_at IS NOT NULL;
