-- The platform's own resources belong to no tenant (issue 26): the alert subscription, each
-- forwarding partner's subscription (fwd_<partner>) and their events lived in app_default, so any
-- key scoped to app_default read B's alerts and the partners' payloads, and could repoint those
-- subscriptions. They move to `app_platform`, an application no key can be scoped to
-- (shared/tenancy/apiKeys.ts), which only operators see. docs/tenancy.md#operator-only.
INSERT INTO outbound_applications (id, name) VALUES ('app_platform', 'platform (operator-only: alerts, forwarding)')
ON CONFLICT (id) DO NOTHING;

-- The alert subscription: the one the release before picked (the earliest with its description),
-- so the platform keeps using it. Others that merely share the description stay their tenant's.
UPDATE outbound_subscriptions SET application_id = 'app_platform', updated_at = now()
WHERE id = (SELECT id FROM outbound_subscriptions
            WHERE description = 'system: alerts to ALERT_WEBHOOK_URL' AND application_id = 'app_default'
            ORDER BY created_at LIMIT 1);

-- Forwarding subscriptions: only the platform makes `fwd_` ids (created subscriptions are `sub_…`).
UPDATE outbound_subscriptions SET application_id = 'app_platform', updated_at = now()
WHERE application_id = 'app_default' AND starts_with(id, 'fwd_');

-- Their events: every event delivered to a platform subscription (alerts, forwards), and the
-- alerts the scanner raised with no alert subscription (ids alert-dl-… / alert-q-…), which fanned
-- out to app_default's subscriptions to `alert.*` or `*`.
UPDATE outbound_events e SET application_id = 'app_platform'
WHERE e.application_id = 'app_default'
  AND (EXISTS (SELECT 1 FROM outbound_deliveries d JOIN outbound_subscriptions s ON s.id = d.subscription_id
               WHERE d.event_id = e.id AND s.application_id = 'app_platform')
       OR (starts_with(e.type, 'alert.') AND (starts_with(e.id, 'alert-dl-') OR starts_with(e.id, 'alert-q-'))));

-- What the old fan-out still had to send of those events to tenant subscriptions is not sent: an
-- alert may be about another application. Cancelled (kept, with its attempts), as a deleted
-- subscription's pending deliveries are. Those already made stay as history.
UPDATE outbound_deliveries d SET status = 'cancelled', cancelled_at = now(), updated_at = now()
FROM outbound_events e, outbound_subscriptions s
WHERE e.id = d.event_id AND s.id = d.subscription_id
  AND e.application_id = 'app_platform' AND s.application_id <> 'app_platform'
  AND d.status = 'pending';
