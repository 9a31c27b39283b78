/**
 * Issue 29, item 2: `encryption_key.missing`. A subscription whose signing secret is under a key id
 * that ENCRYPTION_KEYS lacks: its deliveries wait unsent (as before), and the alert poller sends
 * one `encryption_key.missing` naming the key and how many deliveries wait, signed, to the
 * operator's destination; scanning again within the hour adds none; no application gets it.
 * Both backends.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, expect, it } from "vitest";
import { scanForAlerts } from "../../shared/alerts.js";
import { useKeyring } from "../../shared/crypto/activeKeyring.js";
import { parseEncryptionKeys } from "../../shared/crypto/keyring.js";
import { createSubscription } from "../../shared/outbound/index.js";
import { generateSecret } from "../../shared/outbound/signature.js";
import { describeEachBackend } from "../support/databases.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";

describeEachBackend("encryption_key.missing operational events", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  const operatorSecret = generateSecret();

  beforeAll(async () => {
    receiver = await startTestReceiver();
    t = await startTestPlatform(ctx.db, { ALERT_WEBHOOK_URL: `${receiver.url}/operator`, ALERT_WEBHOOK_SECRET: operatorSecret });
  }, 180_000);
  afterAll(async () => {
    useKeyring(undefined);
    await t?.stop();
    await receiver?.close();
  });

  const eventsAt = (path: string) => receiver.received
    .filter((r) => r.path === path && r.status === 200)
    .map((r) => JSON.parse(r.body))
    .filter((e) => e.type === "encryption_key.missing");

  it("deliveries waiting for a key ENCRYPTION_KEYS lacks: one encryption_key.missing to the operator, naming it", async () => {
    const app = (await t.api("POST", "/applications", { name: "K" })).id;
    await t.api("POST", "/subscriptions", { applicationId: app, url: `${receiver.url}/k-ops`, eventTypes: ["encryption_key.*", "auth.*"] });
    // Written by a process that had a key "ghost" this one lacks.
    useKeyring(parseEncryptionKeys(`ghost:${Buffer.alloc(32, 7).toString("base64")}`));
    const sub = await createSubscription(ctx.db, { applicationId: app, url: `${receiver.url}/k-endpoint`, eventTypes: ["k.*"] });
    useKeyring(undefined);
    for (let i = 0; i < 3; i++) await t.api("POST", "/events", { applicationId: app, id: `k-${ctx.backend}-${i}`, type: "k.x", data: { i } });
    await eventually("the deliveries put back unsent", async () => (await ctx.db.query(
      "SELECT 1 FROM outbound_deliveries WHERE subscription_id = $1 AND status = 'pending' AND last_error LIKE 'secrets unreadable:%'", [sub.id])).rows.length === 3, 40_000);

    await eventually("encryption_key.missing at the operator", async () => { await scanForAlerts(ctx.db); return eventsAt("/operator").length > 0; }, 40_000);
    await scanForAlerts(ctx.db);
    await scanForAlerts(ctx.db);
    const events = eventsAt("/operator");
    expect(events).toHaveLength(1);
    expect(events[0].data).toMatchObject({ keyId: "ghost", deliveriesWaiting: 3, subscriptionIds: [sub.id], detail: expect.stringContaining('key id "ghost"') });
    const r = receiver.received.find((x) => x.path === "/operator" && x.body.includes("encryption_key.missing"))!;
    expect(new Webhook(operatorSecret).verify(r.body, r.headers as Record<string, string>)).toMatchObject({ type: "encryption_key.missing" });
    // The operator's keys: no application's subscription gets it, not even one naming the type.
    expect(eventsAt("/k-ops")).toEqual([]);
    expect(receiver.received.filter((x) => x.path === "/k-endpoint")).toEqual([]);
  }, 180_000);
});
