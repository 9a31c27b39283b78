-- The attempt log no longer checks its delivery by foreign key. The check ran once per logged
-- attempt, on the relay's hottest statement (measured: about a fifth of a completion batch's
-- PostgreSQL CPU), and it could wedge a relay: a completion whose lease had long expired logs its
-- attempt for a delivery that retention may have deleted since, and a foreign-key error would fail
-- that batch on every retry. Attempts are only written by completions, for deliveries they
-- claimed and that still exist (the completion statement checks, for stale ones only), and are
-- deleted by retention together with their delivery.
ALTER TABLE outbound_attempts DROP CONSTRAINT IF EXISTS outbound_attempts_delivery_id_fkey;
