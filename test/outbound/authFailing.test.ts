/**
 * Issue 29, item 2: `auth.failing`. A subscription of application B whose OAuth 2.0 client secret
 * is wrong produces one `auth.failing` (errorClass auth_token_rejected), signed, at the operator's
 * destination and at B's own subscription to `auth.*`, none at application C's (`auth.*` and `*`)
 * nor B's `*`; more failing deliveries within the window add none (debounced). A client certificate
 * within 30 days of its expiry produces one `auth.failing` (client_certificate_expiring) before it
 * expires. Both backends.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, expect, it } from "vitest";
import { scanForAlerts } from "../../shared/alerts.js";
import { generateSecret } from "../../shared/outbound/signature.js";
import { describeEachBackend } from "../support/databases.js";
import { createTestCa } from "../support/opensslCertificates.js";
import { startOauth2TokenTestPeer, type Oauth2TokenTestPeer } from "../support/oauth2TokenTestPeer.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";

type Json = Record<string, any>;

describeEachBackend("auth.failing operational events", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  let peer: Oauth2TokenTestPeer;
  const operatorSecret = generateSecret();
  let appB: string;
  let bOps: Json;

  beforeAll(async () => {
    receiver = await startTestReceiver();
    peer = await startOauth2TokenTestPeer();
    t = await startTestPlatform(ctx.db, { ALERT_WEBHOOK_URL: `${receiver.url}/operator`, ALERT_WEBHOOK_SECRET: operatorSecret });
    appB = (await t.api("POST", "/applications", { name: "B" })).id;
    const appC = (await t.api("POST", "/applications", { name: "C" })).id;
    const sub = (applicationId: string, path: string, eventTypes: string[]) => t.api("POST", "/subscriptions", { applicationId, url: `${receiver.url}${path}`, eventTypes });
    bOps = await sub(appB, "/b-ops", ["auth.*"]);
    await sub(appB, "/b-star", ["*"]);
    await sub(appC, "/c-ops", ["auth.*"]);
    await sub(appC, "/c-star", ["*"]);
  }, 180_000);
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
    await peer?.close();
  });

  const eventsAt = (path: string) => receiver.received
    .filter((r) => r.path === path && r.status === 200)
    .map((r) => ({ ...JSON.parse(r.body), headers: r.headers }))
    .filter((e) => e.type === "auth.failing");
  const scanned = <T>(what: string, check: () => Promise<T> | T) => eventually(what, async () => { await scanForAlerts(ctx.db); return check(); }, 40_000);

  it("a wrong client secret: one auth.failing to the operator and to B's own subscription, none to C's; debounced", async () => {
    const endpoint = await t.api("POST", "/subscriptions", {
      applicationId: appB, url: `${receiver.url}/b-endpoint`, eventTypes: ["order.*"],
      auth: { kind: "oauth2ClientCredentials", tokenUrl: peer.tokenUrl, clientId: peer.clientId, clientSecret: "wrong-secret" },
    });
    for (let i = 0; i < 3; i++) await t.api("POST", "/events", { applicationId: appB, id: `bad-${ctx.backend}-${i}`, type: "order.paid", data: { i } });
    await eventually("the deliveries dead-lettered", async () => (await ctx.db.query("SELECT 1 FROM outbound_deliveries WHERE subscription_id = $1 AND status = 'dead'", [endpoint.id])).rows.length === 3, 40_000);
    await scanned("auth.failing at the operator", () => eventsAt("/operator").length > 0);
    await scanned("auth.failing at B's subscription", () => eventsAt("/b-ops").length > 0);
    // More failures, and more scans: nothing more within the window.
    for (let i = 3; i < 6; i++) await t.api("POST", "/events", { applicationId: appB, id: `bad-${ctx.backend}-${i}`, type: "order.paid", data: { i } });
    await eventually("those dead-lettered too", async () => (await ctx.db.query("SELECT 1 FROM outbound_deliveries WHERE subscription_id = $1 AND status = 'dead'", [endpoint.id])).rows.length === 6, 40_000);
    await scanForAlerts(ctx.db);

    expect(eventsAt("/operator")).toHaveLength(1);
    expect(eventsAt("/b-ops")).toHaveLength(1);
    const [event] = eventsAt("/operator");
    expect(event.data).toMatchObject({ subscriptionId: endpoint.id, applicationId: appB, url: `${receiver.url}/b-endpoint`, kind: "oauth2ClientCredentials", errorClass: "auth_token_rejected", detail: expect.stringContaining("invalid_client") });
    expect(JSON.stringify(event)).not.toContain("wrong-secret");
    expect(eventsAt("/b-ops")[0].data).toEqual(event.data);
    const signed = (secret: string, path: string) => {
      const r = receiver.received.find((x) => x.path === path && x.body.includes("auth.failing"))!;
      return new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    };
    expect(signed(operatorSecret, "/operator")).toMatchObject({ type: "auth.failing" });
    expect(signed(bOps.secrets[0], "/b-ops")).toMatchObject({ type: "auth.failing" });
    for (const path of ["/c-ops", "/c-star", "/b-star"]) expect(eventsAt(path), path).toEqual([]);
  }, 180_000);

  it("a client certificate about to expire: one auth.failing (client_certificate_expiring) before it does", async () => {
    const ca = createTestCa();
    const soon = ca.client("soon", { notAfter: new Date(Date.now() + 5 * 86_400_000) });
    const endpoint = await t.api("POST", "/subscriptions", { applicationId: appB, url: `${receiver.url}/b-mtls`, eventTypes: ["invoice.*"], auth: { kind: "mtls", certificate: soon.cert, privateKey: soon.key } });
    expect(endpoint.warnings).toEqual([expect.stringMatching(/expires on .* \(in 4 days\)/)]);
    for (let i = 0; i < 3; i++) await t.api("POST", "/events", { applicationId: appB, id: `inv-${ctx.backend}-${i}`, type: "invoice.sent", data: { i } });
    await eventually("delivered (http: the certificate is not needed there)", async () => (await ctx.db.query("SELECT 1 FROM outbound_deliveries WHERE subscription_id = $1 AND status = 'delivered'", [endpoint.id])).rows.length === 3, 40_000);
    const expiring = () => eventsAt("/operator").filter((e) => e.data.errorClass === "client_certificate_expiring");
    await scanned("auth.failing (expiring) at the operator", () => expiring().length > 0);
    await scanForAlerts(ctx.db);
    expect(expiring()).toHaveLength(1);
    expect(expiring()[0].data).toMatchObject({ subscriptionId: endpoint.id, kind: "mtls", detail: expect.stringContaining("CN=soon") });
    expect(eventsAt("/b-ops").filter((e) => e.data.errorClass === "client_certificate_expiring")).toHaveLength(1);
  }, 180_000);
});
