-- One trace per webhook across every hop (issue 33): the W3C trace context travels with the rows
-- a webhook passes through, so a span started later, in another process, continues the same trace.
-- traceparent: `00-<trace id>-<span id>-<flags>` of the span that wrote the row (the ingest of an
--   inbox entry, the enqueue of an outbound event); NULL when no tracing SDK ran there (the
--   default), and then nothing reads it.
-- send_traceparent: whether the relay sends the `traceparent` header to this subscription's
--   endpoint (on by default: it is the W3C standard, and carries ids only).
-- Nullable columns and a constant default: no table rewrite.
ALTER TABLE inbox_entries ADD COLUMN traceparent text;
ALTER TABLE outbound_events ADD COLUMN traceparent text;
ALTER TABLE outbound_subscriptions ADD COLUMN send_traceparent boolean NOT NULL DEFAULT true;
