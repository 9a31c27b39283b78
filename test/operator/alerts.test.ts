/** The alert hook: one alert per new dead letter or quarantined entry, through our own outbox. */
import { expect, it } from "vitest";
import { ALERT_SUBSCRIPTION_DESCRIPTION, ensureAlertSubscription, scanForAlerts } from "../../shared/alerts.js";
import { generateSecret } from "../../shared/outbound/signature.js";
import { openSecrets } from "../../shared/crypto/subscriptionSecrets.js";
import { describeEachBackend } from "../support/databases.js";
import { eventually, makeDeadLetter, usePlatformAndReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

describeEachBackend("alerts", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  const secret = generateSecret();
  usePlatformAndReceiver(() => ctx.db, (platform, r) => { t = platform; receiver = r; });

  it("keeps one system subscription for the alert URL, following URL and secret changes", async () => {
    const id = await ensureAlertSubscription(ctx.db, `${receiver.url}/alerts`, secret);
    expect(await ensureAlertSubscription(ctx.db, `${receiver.url}/alerts`, secret)).toBe(id);
    expect(await ensureAlertSubscription(ctx.db, `${receiver.url}/alerts2`, secret)).toBe(id);
    const rows = await ctx.db.query<{ id: string; url: string; secrets: string[]; event_types: string[] }>("SELECT id, url, secrets, event_types FROM outbound_subscriptions WHERE description = $1", [ALERT_SUBSCRIPTION_DESCRIPTION]);
    // The secret is stored encrypted (docs/secrets.md), and opens to the configured one.
    expect(rows.rows.map((r) => ({ ...r, secrets: openSecrets(r.id, r.secrets) }))).toEqual([{ id, url: `${receiver.url}/alerts2`, secrets: [secret], event_types: ["alert.*", "endpoint.*", "auth.*", "encryption_key.*", "delivery.*", "inbox.*"] }]);
    expect(rows.rows[0]!.secrets[0]).toMatch(/^enc\.v1\./);
    await ensureAlertSubscription(ctx.db, `${receiver.url}/alerts`, secret);
  });

  it("refuses to look back further than retention keeps the alert events that mark what was announced", async () => {
    await expect(scanForAlerts(ctx.db, { lookbackHours: 169 })).rejects.toThrow(/lookbackHours must be a whole number from 1 to 168 \(retention keeps alert events 8 days at least\); got 169/);
    await expect(scanForAlerts(ctx.db, { lookbackHours: 0 })).rejects.toThrow(RangeError);
    await expect(scanForAlerts(ctx.db, { lookbackHours: 1.5 })).rejects.toThrow(RangeError);
  });

  it("raises one alert per dead letter, delivers it signed, and none for the alert's own deliveries", async () => {
    receiver.answer = ({ path }) => (path === "/alerts" ? 200 : 400);
    const { deliveryId } = await makeDeadLetter(t, `${receiver.url}/dead`, `alert-${ctx.backend}`);
    // Whoever scans first (this call, or the platform's own poller if it runs one) raises it; once.
    const alertsFor = async (id: string) => (await ctx.db.query<{ data: { reason: string } }>(
      "SELECT body::jsonb -> 'data' AS data FROM outbound_events WHERE type = 'alert.dead_letter' AND application_id = 'app_platform' AND body::jsonb -> 'data' ->> 'deliveryId' = $1", [id])).rows;
    await scanForAlerts(ctx.db);
    expect(await alertsFor(deliveryId)).toEqual([{ data: expect.objectContaining({ reason: expect.stringContaining("permanent") }) }]);
    await scanForAlerts(ctx.db);
    expect(await alertsFor(deliveryId)).toHaveLength(1); // idempotent: the event id marks it as raised
    // …and its copy for the dead letter's own application (app_default here), once (docs/operations.md#alerts).
    const copies = await ctx.db.query<{ application_id: string }>("SELECT application_id FROM outbound_events WHERE type = 'alert.dead_letter' AND application_id <> 'app_platform' AND body::jsonb -> 'data' ->> 'deliveryId' = $1", [deliveryId]);
    expect(copies.rows).toEqual([{ application_id: "app_default" }]);

    const alert = await eventually("the alert delivery", async () => receiver.received.find((r) => r.path === "/alerts" && r.status === 200));
    expect(JSON.parse(alert.body)).toMatchObject({ type: "alert.dead_letter", data: { deliveryId } });
    expect(alert.headers["webhook-signature"]).toMatch(/^v1,/);

    // The alert URL breaks: its own dead letter raises no alert (no loop).
    receiver.answer = 400;
    await ctx.db.query("UPDATE outbound_subscriptions SET max_attempts = 1 WHERE description = $1", [ALERT_SUBSCRIPTION_DESCRIPTION]);
    await t.api("POST", `/dead-letters/${encodeURIComponent(deliveryId)}/replay`);
    await eventually("the replayed delivery to die again", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(deliveryId)}`)).status === "dead");
    // A replayed-then-dead-again delivery is a new dead letter: a new alert.
    await scanForAlerts(ctx.db);
    expect(await alertsFor(deliveryId)).toHaveLength(2);
    await eventually("the alert's own delivery to die", async () => {
      const rows = await ctx.db.query("SELECT 1 FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id WHERE e.type = 'alert.dead_letter' AND d.status = 'dead'");
      return rows.rows.length > 0;
    });
    await scanForAlerts(ctx.db);
    const alertTypes = await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbound_events WHERE type = 'alert.dead_letter' AND application_id = 'app_platform'");
    expect(alertTypes.rows[0]!.n).toBe(2); // the dead alert delivery raised nothing
  });
});
