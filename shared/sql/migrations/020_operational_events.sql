-- Operational events (issue 29): every change of an endpoint's health (the breaker's status) is
-- recorded by the database itself, in the transaction that made it, whoever made it (a relay, a
-- cloud function, an operator's enable), so none can be missed; the alert poller turns each into
-- an `endpoint.*` event (shared/operationalEvents.ts), debounced per subscription and type.
-- docs/operations.md#operational-events.
CREATE TABLE outbound_health_transitions (
  id               bigserial PRIMARY KEY,
  subscription_id  text NOT NULL,
  application_id   text NOT NULL,
  from_status      text NOT NULL,
  to_status        text NOT NULL,
  -- 'operator': an operator re-enabled it (POST /subscriptions/{id}/enable); NULL: the breaker.
  cause            text,
  at               timestamptz NOT NULL DEFAULT now(),
  -- Set by the poller: the event type it stood for, and the event raised (NULL: none, debounced
  -- or a change that raises nothing, such as degraded back to active).
  handled_at       timestamptz,
  event_type       text,
  event_id         text
);
-- The poller's queue (tiny: transitions are rare) and the debounce look-up.
CREATE INDEX outbound_health_transitions_unhandled ON outbound_health_transitions (id) WHERE handled_at IS NULL;
CREATE INDEX outbound_health_transitions_raised ON outbound_health_transitions (subscription_id, event_type, at) WHERE event_id IS NOT NULL;

CREATE FUNCTION outbound_record_health_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO outbound_health_transitions (subscription_id, application_id, from_status, to_status, cause)
  VALUES (NEW.id, NEW.application_id, OLD.status, NEW.status, nullif(current_setting('webhooks.health_cause', true), ''));
  RETURN NULL;
END $$;

-- Fires only when the status changes (rare): the relay's other writes to the row pay nothing.
CREATE TRIGGER outbound_subscriptions_health_transition
  AFTER UPDATE OF status ON outbound_subscriptions
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION outbound_record_health_transition();
