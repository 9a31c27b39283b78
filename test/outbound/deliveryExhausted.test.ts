/**
 * Issue 29, operational events `delivery.exhausted` and `inbox.quarantined`. A burst of dead
 * letters from one endpoint of application B gives exactly one `delivery.exhausted` per debounce
 * window, signed, to the operator's destination and to B's own subscription to `delivery.*`, with
 * the count and the delivery ids; none to another application's (C subscribes to `delivery.*` and
 * `*`), none to B's `*`. Dead letters within the window wait and are announced together once it
 * has passed, each counted once. A `delivery.exhausted` whose own deliveries die announces nothing
 * (no loop). The `alert.dead_letter` alerts still go out, one per dead letter (backwards
 * compatible). A quarantined inbox entry gives `inbox.quarantined` (and its alert) to the operator
 * only. Both backends.
 *
 * The platform's own alert poller is stopped so that this test's scans are the only ones and the
 * window is the test's to place; the relay runs as in production.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ALERT_SUBSCRIPTION_DESCRIPTION, ensureAlertSubscription, scanForAlerts } from "../../shared/alerts.js";
import { scanDeliveryExhaustions } from "../../shared/deliveryExhaustedEvents.js";
import { generateSecret, sign } from "../../shared/outbound/signature.js";
import { describeEachBackend } from "../support/databases.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";

type Json = Record<string, any>;

describeEachBackend("delivery.exhausted and inbox.quarantined operational events", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  const operatorSecret = generateSecret();
  const partnerSecret = generateSecret();
  const failing = new Set<string>(["/b-dead"]);
  let appB: string;
  let appC: string;
  let dead: Json;
  let bOps: Json;

  beforeAll(async () => {
    receiver = await startTestReceiver();
    receiver.answer = ({ path }) => (failing.has(path) ? 400 : 200);
    t = await startTestPlatform(ctx.db, {
      ALERT_WEBHOOK_URL: `${receiver.url}/operator`,
      ALERT_WEBHOOK_SECRET: operatorSecret,
      PARTNERS: JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [partnerSecret] } }),
    });
    await t.platform.workers.find((w) => w.name === "alerts")!.stop();
    await ensureAlertSubscription(ctx.db, `${receiver.url}/operator`, operatorSecret);
    appB = (await t.api("POST", "/applications", { name: "B" })).id;
    appC = (await t.api("POST", "/applications", { name: "C" })).id;
    const sub = (applicationId: string, path: string, eventTypes: string[], extra: Json = {}) =>
      t.api("POST", "/subscriptions", { applicationId, url: `${receiver.url}${path}`, eventTypes, ...extra });
    dead = await sub(appB, "/b-dead", ["order.*"], { maxAttempts: 1 });
    bOps = await sub(appB, "/b-ops", ["delivery.*"]);
    await sub(appB, "/b-star", ["*"]);
    await sub(appC, "/c-ops", ["delivery.*"]);
    await sub(appC, "/c-star", ["*"]);
  }, 180_000);
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  const eventsAt = (path: string, type: string) => receiver.received
    .filter((r) => r.path === path && r.status === 200)
    .map((r) => JSON.parse(r.body))
    .filter((e) => e.type === type);
  const deadLetters = async (tag: string, n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const event = await t.api("POST", "/events", { applicationId: appB, id: `${tag}-${ctx.backend}-${i}`, type: "order.paid", data: { i } });
      ids.push(...event.deliveries.filter((d: Json) => d.subscriptionId === dead.id).map((d: Json) => d.id));
    }
    for (const id of ids) await eventually(`${id} dead`, async () => (await t.api("GET", `/deliveries/${encodeURIComponent(id)}`)).status === "dead", 40_000);
    return ids;
  };
  const exhaustedEvents = async () => (await ctx.db.query<{ id: string; application_id: string; data: Json }>(
    "SELECT id, application_id, body::jsonb -> 'data' AS data FROM outbound_events WHERE type = 'delivery.exhausted' ORDER BY id")).rows;

  it("a burst of dead letters: one delivery.exhausted per window with the count, to the operator and B's own subscription only", async () => {
    const first = await deadLetters("burst", 5);
    await scanForAlerts(ctx.db);
    await eventually("delivery.exhausted at the operator", async () => eventsAt("/operator", "delivery.exhausted").length > 0, 40_000);
    await eventually("delivery.exhausted at B's subscription", async () => eventsAt("/b-ops", "delivery.exhausted").length > 0, 40_000);
    const [toOperator] = eventsAt("/operator", "delivery.exhausted");
    expect(toOperator.data).toMatchObject({ subscriptionId: dead.id, applicationId: appB, url: `${receiver.url}/b-dead`, count: 5, reason: expect.stringContaining("400") });
    expect([...toOperator.data.deliveryIds].sort()).toEqual([...first].sort());
    expect(eventsAt("/b-ops", "delivery.exhausted")[0].data).toEqual(toOperator.data);
    // Signed like any event: with the operator's secret, and with B's subscription's own.
    const verify = (secret: string, path: string) => {
      const r = receiver.received.find((x) => x.path === path && x.body.includes("delivery.exhausted"))!;
      return new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    };
    expect(verify(operatorSecret, "/operator")).toMatchObject({ type: "delivery.exhausted" });
    expect(verify(bOps.secrets[0], "/b-ops")).toMatchObject({ type: "delivery.exhausted" });
    // The alerts still go out, one per dead letter, as before.
    await eventually("five alert.dead_letter at the operator", async () => eventsAt("/operator", "alert.dead_letter").length === 5, 40_000);

    // More dead letters within the window: no second event yet, however often it is scanned.
    const more = await deadLetters("later", 3);
    await scanForAlerts(ctx.db);
    await scanForAlerts(ctx.db);
    expect((await exhaustedEvents()).filter((e) => e.application_id === "app_platform")).toHaveLength(1);
    // The window passed (here: a window of 0 s): the waiting ones, together, in one event.
    const [second, ...others] = await scanDeliveryExhaustions(ctx.db, { debounceSeconds: 0 });
    expect(others).toEqual([]);
    expect(second).toMatchObject({ subscriptionId: dead.id, count: 3 });
    expect([...second!.deliveryIds].sort()).toEqual([...more].sort());
    await eventually("the second delivery.exhausted at both", async () => eventsAt("/operator", "delivery.exhausted").length === 2 && eventsAt("/b-ops", "delivery.exhausted").length === 2, 40_000);
    expect(await scanDeliveryExhaustions(ctx.db, { debounceSeconds: 0 })).toEqual([]); // each counted once

    // Never another application's, not even its `*`; nor B's `*` (asked for by name).
    for (const path of ["/c-ops", "/c-star", "/b-star"]) expect(eventsAt(path, "delivery.exhausted"), path).toEqual([]);
    const events = await exhaustedEvents();
    expect(events.map((e) => e.application_id).sort()).toEqual(["app_platform", "app_platform", appB, appB].sort());
    const { rows } = await ctx.db.query(
      `SELECT d.id FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id JOIN outbound_subscriptions s ON s.id = d.subscription_id
       WHERE e.type = 'delivery.exhausted' AND s.application_id NOT IN ('app_platform', $1)`, [appB]);
    expect(rows).toEqual([]);
  }, 240_000);

  it("no loop: a delivery.exhausted whose own deliveries die announces nothing", async () => {
    failing.add("/operator").add("/b-ops");
    await ctx.db.query("UPDATE outbound_subscriptions SET max_attempts = 1 WHERE description = $1 OR id = $2", [ALERT_SUBSCRIPTION_DESCRIPTION, bOps.id]);
    await deadLetters("loop", 1);
    const [raised] = await scanDeliveryExhaustions(ctx.db, { debounceSeconds: 0 });
    expect(raised).toMatchObject({ subscriptionId: dead.id, count: 1 });
    const deliveriesOf = async (eventIds: string[]) => (await ctx.db.query<{ status: string; subscription_id: string }>(
      "SELECT status, subscription_id FROM outbound_deliveries WHERE event_id = ANY($1::text[])", [eventIds])).rows;
    const ids = [raised!.eventId, `${raised!.eventId}.${appB}`];
    await eventually("its deliveries to the operator and to B to die", async () => {
      const rows = await deliveriesOf(ids);
      return rows.length === 2 && rows.every((r) => r.status === "dead");
    }, 60_000);
    expect(await scanDeliveryExhaustions(ctx.db, { debounceSeconds: 0 })).toEqual([]);
    await scanForAlerts(ctx.db);
    expect(await scanDeliveryExhaustions(ctx.db, { debounceSeconds: 0 })).toEqual([]);
    const about = await ctx.db.query("SELECT 1 FROM outbound_delivery_exhaustions WHERE subscription_id <> $1", [dead.id]);
    expect(about.rows).toEqual([]);
    // Nor an alert about them (the alert guard knows them as the platform's own).
    const alerts = await ctx.db.query("SELECT 1 FROM outbound_events WHERE type = 'alert.dead_letter' AND body::jsonb -> 'data' ->> 'eventType' = 'delivery.exhausted'");
    expect(alerts.rows).toEqual([]);
    failing.delete("/operator");
    failing.delete("/b-ops");
  }, 180_000);

  it("a quarantined inbox entry: inbox.quarantined to the operator only, beside its alert", async () => {
    const id = `msg-${ctx.backend}-q`;
    const body = JSON.stringify({ type: "order.paid", data: {} }); // no order_id: rejected, quarantined
    const ts = Math.floor(Date.now() / 1000);
    const res = await fetch(`${t.baseUrl}/webhooks/shop`, {
      method: "POST",
      headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": `v1,${sign(partnerSecret, id, ts, body)}` },
      body,
    });
    const { inboxId } = (await res.json()) as { inboxId: string };
    await eventually(`${inboxId} quarantined`, async () => (await t.api("GET", `/inbox/${inboxId}`)).status === "quarantined", 40_000);
    await scanForAlerts(ctx.db);
    await eventually("inbox.quarantined at the operator", async () => eventsAt("/operator", "inbox.quarantined").length > 0, 40_000);
    await eventually("alert.inbox_quarantined at the operator", async () => eventsAt("/operator", "alert.inbox_quarantined").length > 0, 40_000);
    await scanForAlerts(ctx.db);
    const [event] = eventsAt("/operator", "inbox.quarantined");
    expect(eventsAt("/operator", "inbox.quarantined")).toHaveLength(1);
    expect(event.data).toMatchObject({ entryId: String(inboxId), partner: "shop", partnerEventId: id, reason: expect.any(String) });
    expect(event.data).toEqual(eventsAt("/operator", "alert.inbox_quarantined")[0].data);
    const r = receiver.received.find((x) => x.path === "/operator" && x.body.includes("inbox.quarantined"))!;
    expect(new Webhook(operatorSecret).verify(r.body, r.headers as Record<string, string>)).toMatchObject({ type: "inbox.quarantined" });
    // The operator's alone: no application has the event, nor a delivery of it.
    const apps = await ctx.db.query<{ application_id: string }>("SELECT application_id FROM outbound_events WHERE type = 'inbox.quarantined'");
    expect(apps.rows).toEqual([{ application_id: "app_platform" }]);
    for (const path of ["/b-ops", "/b-star", "/c-ops", "/c-star"]) expect(eventsAt(path, "inbox.quarantined"), path).toEqual([]);
  }, 180_000);
});
