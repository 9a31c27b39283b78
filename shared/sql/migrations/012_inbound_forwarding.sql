-- Forwarding (issue 16): an inbound event handed on through the outbox carries the partner's
-- original bytes as its body and says who sent it in headers of its own, laid over the
-- subscription's headers when it is delivered. NULL for every other event (no rewrite).
ALTER TABLE outbound_events ADD COLUMN headers jsonb;
