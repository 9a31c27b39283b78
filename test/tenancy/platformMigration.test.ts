/**
 * Issue 26, Must show 4: migration 015 on a database of the release before it (PostgreSQL and
 * PGlite). Its alert subscription, its forwarding subscription and their events lived in
 * `app_default`, within reach of any key scoped to it. Afterwards they belong to the platform's
 * own application: the platform finds and keeps using the same subscriptions (no second alert
 * subscription), their pending deliveries are delivered, and a key scoped to `app_default` gets
 * 404 on each of them. Pending deliveries of alerts to tenant subscriptions (what the old fan-out
 * made) are cancelled, not sent; the tenant's own subscription and events stay where they were.
 */
import { afterAll, describe, expect, it } from "vitest";
import { ALERT_SUBSCRIPTION_DESCRIPTION } from "../../shared/alerts.js";
import { sealSecrets } from "../../shared/crypto/subscriptionSecrets.js";
import { migrate } from "../../shared/db/migrate.js";
import type { Database } from "../../shared/db/port.js";
import { generateSecret } from "../../shared/outbound/signature.js";
import { PLATFORM_APPLICATION_ID } from "../../shared/tenancy/defaults.js";
import { postgresAvailable } from "../support/databases.js";
import { emptyDatabases, migrateBefore } from "../support/migrateBefore.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";

const backends = emptyDatabases(4);

const serverUp = await postgresAvailable();
const PARTNER_SECRET = `whsec_${Buffer.from("platform-migration-partner-secret").toString("base64")}`;

for (const backend of backends) {
  describe.skipIf(backend.name === "postgres" && !serverUp)(`migration 015 on a database of the release before [${backend.name}]`, () => {
    let opened: { db: Database; close: () => Promise<void> } | undefined;
    let t: TestPlatform | undefined;
    let receiver: TestReceiver | undefined;
    afterAll(async () => {
      await t?.stop();
      await receiver?.close();
      await opened?.close();
    });

    it("moves the alert and forwarding subscriptions and their events out of app_default, and they keep working", async () => {
      opened = await backend.open();
      const { db } = opened;
      receiver = await startTestReceiver();
      const alertUrl = `${receiver.url}/operator-alerts`;
      const forwardUrl = `${receiver.url}/internal-forward`;
      const alertSecret = generateSecret();
      const forwardSecret = generateSecret();
      await migrateBefore(db, "015");

      // What the release before wrote: system subscriptions in app_default, beside a tenant's `*`.
      const sub = (id: string, url: string, types: string[], description: string | null, secret: string) =>
        db.query("INSERT INTO outbound_subscriptions (id, url, event_types, secrets, description) VALUES ($1, $2, $3, $4, $5)", [id, url, types, sealSecrets(id, [secret]), description]);
      await sub("sub_alerts", alertUrl, ["alert.*"], ALERT_SUBSCRIPTION_DESCRIPTION, alertSecret);
      await sub("fwd_shop", forwardUrl, ["webhooks.forward.shop"], "forwarding of partner shop (PARTNERS)", forwardSecret);
      await sub("sub_tenant", `${receiver.url}/tenant-star`, ["*"], null, generateSecret());
      // A tenant's subscription that merely shares the description is not the platform's.
      await sub("sub_lookalike", `${receiver.url}/lookalike`, ["alert.*"], ALERT_SUBSCRIPTION_DESCRIPTION, generateSecret());
      await db.query("UPDATE outbound_subscriptions SET created_at = now() + interval '1 second' WHERE id = 'sub_lookalike'");
      const alertBody = JSON.stringify({ id: "alert-dl-0123-0", type: "alert.dead_letter", timestamp: new Date().toISOString(), data: { deliveryId: "evt_b:sub_b", subscriptionId: "sub_b" } });
      await db.query("INSERT INTO outbound_events (id, type, body) VALUES ('alert-dl-0123-0', 'alert.dead_letter', $1)", [alertBody]);
      await db.query("INSERT INTO outbound_deliveries (id, event_id, subscription_id) VALUES ('alert-dl-0123-0:sub_alerts', 'alert-dl-0123-0', 'sub_alerts'), ('alert-dl-0123-0:sub_tenant', 'alert-dl-0123-0', 'sub_tenant')");
      await db.query(`INSERT INTO outbound_events (id, type, body, headers) VALUES ('fwd_1', 'webhooks.forward.shop', '{"from":"partner"}', '{"webhooks-partner":"shop"}')`);
      await db.query("INSERT INTO outbound_deliveries (id, event_id, subscription_id) VALUES ('fwd_1:fwd_shop', 'fwd_1', 'fwd_shop')");
      await db.query("INSERT INTO outbound_events (id, type, body) VALUES ('evt_tenant', 'order.paid', '{}')");
      await db.query("INSERT INTO outbound_deliveries (id, event_id, subscription_id, status) VALUES ('evt_tenant:sub_tenant', 'evt_tenant', 'sub_tenant', 'delivered')");

      expect(await migrate(db)).toContain("015_platform_application.sql");
      const owner = async (table: string, id: string) => (await db.query<{ application_id: string }>(`SELECT application_id FROM ${table} WHERE id = $1`, [id])).rows[0]!.application_id;
      expect(await owner("outbound_subscriptions", "sub_alerts")).toBe(PLATFORM_APPLICATION_ID);
      expect(await owner("outbound_subscriptions", "fwd_shop")).toBe(PLATFORM_APPLICATION_ID);
      expect(await owner("outbound_events", "alert-dl-0123-0")).toBe(PLATFORM_APPLICATION_ID);
      expect(await owner("outbound_events", "fwd_1")).toBe(PLATFORM_APPLICATION_ID);
      expect(await owner("outbound_subscriptions", "sub_tenant")).toBe("app_default");
      expect(await owner("outbound_subscriptions", "sub_lookalike")).toBe("app_default");
      expect(await owner("outbound_events", "evt_tenant")).toBe("app_default");
      const status = async (id: string) => (await db.query<{ status: string }>("SELECT status FROM outbound_deliveries WHERE id = $1", [id])).rows[0]!.status;
      expect(await status("alert-dl-0123-0:sub_tenant")).toBe("cancelled");
      expect(await status("evt_tenant:sub_tenant")).toBe("delivered");

      // The platform of this release on that database: the same subscriptions, delivering.
      t = await startTestPlatform(db, {
        ALERT_WEBHOOK_URL: alertUrl,
        ALERT_WEBHOOK_SECRET: alertSecret,
        PARTNERS: JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [PARTNER_SECRET], forward: { url: forwardUrl, secrets: [forwardSecret] } } }),
      });
      await eventually("the pending alert delivered", async () => (await status("alert-dl-0123-0:sub_alerts")) === "delivered");
      await eventually("the pending forward delivered", async () => (await status("fwd_1:fwd_shop")) === "delivered");
      expect(receiver.received.filter((r) => r.path === "/tenant-star")).toEqual([]);
      const alertSubs = await db.query<{ id: string }>("SELECT id FROM outbound_subscriptions WHERE application_id = $1 AND deleted_at IS NULL ORDER BY id", [PLATFORM_APPLICATION_ID]);
      expect(alertSubs.rows.map((r) => r.id)).toEqual(["fwd_shop", "sub_alerts"]);
      expect((await t.api("GET", "/subscriptions/sub_lookalike")).url).toBe(`${receiver.url}/lookalike`); // not taken over

      // Out of reach of a key scoped to app_default, in every way the issue found them reachable.
      const key = (await t.api("POST", "/keys", { applicationId: "app_default" })).key as string;
      const as = (method: string, path: string, body?: unknown) => fetch(t!.baseUrl + path, {
        method, headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined,
      }).then(async (r) => ({ status: r.status, text: await r.text() }));
      for (const path of ["/subscriptions/sub_alerts", "/subscriptions/fwd_shop", "/events/alert-dl-0123-0", "/events/fwd_1", "/deliveries/fwd_1%3Afwd_shop"]) {
        expect((await as("GET", path)).status, path).toBe(404);
      }
      expect((await as("PATCH", "/subscriptions/fwd_shop", { url: "https://example.com/stolen" })).status).toBe(404);
      expect((await as("PATCH", "/subscriptions/sub_alerts", { url: "https://example.com/stolen" })).status).toBe(404);
      const listed = await as("GET", "/subscriptions");
      expect(JSON.parse(listed.text).subscriptions.map((s: { id: string }) => s.id).sort()).toEqual(["sub_lookalike", "sub_tenant"]);
      expect(listed.text).not.toContain(alertUrl);
      expect(listed.text).not.toContain(forwardUrl);
      expect((await t.api("GET", "/subscriptions/sub_alerts")).url).toBe(alertUrl);
    }, 180_000);
  });
}
