/**
 * Issue 26, Must show 1 and 2: the platform's own resources (the alert subscription, each
 * forwarding partner's subscription, and their events and deliveries) belong to no tenant.
 *
 * The platform runs with ALERT_WEBHOOK_URL and a forwarding partner configured; application B has
 * dead letters (so alerts about it exist) and its own subscription to its alerts; a partner event
 * was forwarded. Then every operation of `/openapi.json` is walked with keys scoped to
 * `app_default` (write and read-only: D) and to another application (A), aimed at B's resources
 * and at every platform resource: no answer carries another application's ids, a platform URL or
 * the partner's payload, and no platform subscription is changed. Both backends.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, expect, it } from "vitest";
import { scanForAlerts } from "../../shared/alerts.js";
import { generateSecret } from "../../shared/outbound/signature.js";
import { PLATFORM_APPLICATION_ID } from "../../shared/tenancy/defaults.js";
import { describeEachBackend } from "../support/databases.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";
import { authenticatedOperations } from "../support/openapiWalk.js";

type Json = Record<string, any>;

const PARTNER_SECRET = `whsec_${Buffer.from("platform-resources-partner-secret").toString("base64")}`;
/** Text only the partner's payload carries: it must never show in an application key's answer. */
const PARTNER_MARKER = "partner-payload-only-the-operator-reads";

/** Headers of a partner's Standard Webhooks request, signed with the reference library. */
function signedByPartner(id: string, body: string): Record<string, string> {
  const at = new Date();
  return { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(PARTNER_SECRET).sign(id, at, body) };
}

describeEachBackend("the platform's own resources, out of every application key's reach", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  let document: Json;
  const keys = {} as Record<"dWrite" | "dRead" | "aWrite" | "bWrite", string>;
  let appA: string;
  let appB: string;
  /** B's resources: ids no other application's key may see. */
  const b = {} as { app: string; sub: string; alertSub: string; event: string; dead: string };
  /** The platform's resources (operator-only). */
  const platform = {} as Record<"alertSub" | "forwardSub" | "alertUrl" | "forwardUrl" | "alertEvent" | "forwardEvent" | "alertDelivery" | "forwardDelivery" | "quarantineAlert", string>;
  /** D's and A's own subscriptions (to `*` and to `alert.*`), by receiver path. */
  const tenantSubs: Record<string, string> = {};

  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(t.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  };
  const asKey = async (token: string, method: string, path: string, body?: unknown) => {
    const r = await call(token, method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path} → ${r.status} ${r.text}`);
    return JSON.parse(r.text);
  };

  beforeAll(async () => {
    receiver = await startTestReceiver();
    receiver.answer = ({ path }) => (path.startsWith("/b-failing") ? 400 : 200);
    t = await startTestPlatform(ctx.db, {
      ALERT_WEBHOOK_URL: `${receiver.url}/operator-alerts`,
      ALERT_WEBHOOK_SECRET: generateSecret(),
      PARTNERS: JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [PARTNER_SECRET], forward: { url: `${receiver.url}/internal-forward`, secrets: [generateSecret()] } } }),
    });
    appA = (await t.api("POST", "/applications", { name: "A" })).id;
    appB = (await t.api("POST", "/applications", { name: "B" })).id;
    keys.dWrite = (await t.api("POST", "/keys", { applicationId: "app_default" })).key;
    keys.dRead = (await t.api("POST", "/keys", { applicationId: "app_default", access: "read" })).key;
    keys.aWrite = (await t.api("POST", "/keys", { applicationId: appA })).key;
    keys.bWrite = (await t.api("POST", "/keys", { applicationId: appB })).key;

    // D and A subscribe to everything and to alerts, with their own keys.
    for (const [who, key] of [["d", keys.dWrite], ["a", keys.aWrite]] as const) {
      tenantSubs[`/${who}-star`] = (await asKey(key!, "POST", "/subscriptions", { url: `${receiver.url}/${who}-star`, eventTypes: ["*"] })).id;
      tenantSubs[`/${who}-alerts`] = (await asKey(key!, "POST", "/subscriptions", { url: `${receiver.url}/${who}-alerts`, eventTypes: ["alert.*"] })).id;
    }
    // B: an endpoint that refuses everything (dead letters), and its own subscription to its alerts.
    b.sub = (await asKey(keys.bWrite!, "POST", "/subscriptions", { url: `${receiver.url}/b-failing`, eventTypes: ["order.*"], maxAttempts: 1 })).id;
    b.alertSub = (await asKey(keys.bWrite!, "POST", "/subscriptions", { url: `${receiver.url}/b-alerts`, eventTypes: ["alert.dead_letter"] })).id;
    const sent = await asKey(keys.bWrite!, "POST", "/events", { id: `b-order-${ctx.backend}`, type: "order.paid", data: { amount: 1 } });
    b.event = sent.eventId;
    b.dead = sent.deliveries.find((d: Json) => d.subscriptionId === b.sub).id;
    b.app = appB;
    await eventually("B's delivery dead", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(b.dead)}`)).status === "dead");
    await scanForAlerts(ctx.db);

    // A partner event, forwarded to the internal service.
    const body = JSON.stringify({ type: "order.created", marker: PARTNER_MARKER });
    const inbound = await fetch(`${t.baseUrl}/webhooks/shop`, { method: "POST", headers: signedByPartner("msg_platform_1", body), body });
    expect(inbound.status).toBeLessThan(300);

    // The example order handlers quarantine it (no order id): an alert only the operator gets.
    await eventually("the inbox entry settled", async () => (await ctx.db.query("SELECT 1 FROM inbox_entries WHERE status IN ('processed', 'quarantined')")).rows.length > 0);
    await scanForAlerts(ctx.db);
    await eventually("the operator's alert", async () => receiver.received.find((r) => r.path === "/operator-alerts" && r.body.includes(b.dead)));
    await eventually("the forwarded partner event", async () => receiver.received.find((r) => r.path === "/internal-forward" && r.body.includes(PARTNER_MARKER)));

    // What the operator sees of the platform's resources.
    const subs = (await t.api("GET", "/subscriptions?limit=1000")).subscriptions as Json[];
    platform.alertSub = subs.find((s) => s.url === `${receiver.url}/operator-alerts`)!.id;
    platform.forwardSub = subs.find((s) => s.url === `${receiver.url}/internal-forward`)!.id;
    platform.alertUrl = `${receiver.url}/operator-alerts`;
    platform.forwardUrl = `${receiver.url}/internal-forward`;
    const events = (await t.api("GET", "/events?limit=1000")).events as Json[];
    platform.alertEvent = events.find((e) => e.type === "alert.dead_letter" && e.applicationId !== appB)!.id;
    platform.forwardEvent = events.find((e) => e.type === "webhooks.forward.shop")!.id;
    platform.quarantineAlert = events.find((e) => e.type === "alert.inbox_quarantined")!.id;
    const alertEvent = await t.api("GET", `/events/${platform.alertEvent}`);
    platform.alertDelivery = alertEvent.deliveries.find((d: Json) => d.subscriptionId === platform.alertSub).id;
    platform.forwardDelivery = (await t.api("GET", `/events/${platform.forwardEvent}`)).deliveries[0].id;
    document = await (await fetch(`${t.baseUrl}/openapi.json`)).json();
  }, 180_000);
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  it("keeps the alert and forwarding subscriptions and their events in the platform's own application", async () => {
    for (const id of [platform.alertSub, platform.forwardSub]) expect((await t.api("GET", `/subscriptions/${id}`)).applicationId).toBe(PLATFORM_APPLICATION_ID);
    for (const id of [platform.alertEvent, platform.forwardEvent]) expect((await t.api("GET", `/events/${id}`)).applicationId).toBe(PLATFORM_APPLICATION_ID);
    // No key can be scoped to it.
    const refused = await call(t.token, "POST", "/keys", { applicationId: PLATFORM_APPLICATION_ID });
    expect(refused.status, refused.text).toBe(400);
    expect(JSON.parse(refused.text).error.message).toMatch(/operator/);
    const deleted = await call(t.token, "DELETE", `/applications/${PLATFORM_APPLICATION_ID}`);
    expect(deleted.status, deleted.text).toBe(409);
  });

  it("Must show 2: an alert about B's dead letter reaches the operator's destination and B's own subscription, no other application's (not even `*`)", async () => {
    // The alerts (the operator's destination also gets the dead letter's delivery.exhausted, docs/operations.md).
    const alertFor = (path: string) => receiver.received.filter((r) => r.path === path && r.body.includes(b.dead) && String(JSON.parse(r.body).type).startsWith("alert."));
    await eventually("B's own alert", async () => alertFor("/b-alerts").length > 0);
    expect(alertFor("/operator-alerts")).toHaveLength(1);
    expect(alertFor("/b-alerts")).toHaveLength(1);
    expect(JSON.parse(alertFor("/b-alerts")[0]!.body)).toMatchObject({ type: "alert.dead_letter", data: { deliveryId: b.dead, subscriptionId: b.sub, eventId: b.event } });
    // Not merely late: no delivery of any alert was ever made to another application's subscription.
    const { rows } = await ctx.db.query<{ subscription_id: string }>(
      `SELECT d.subscription_id FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id JOIN outbound_subscriptions s ON s.id = d.subscription_id
       WHERE e.type LIKE 'alert.%' AND s.application_id NOT IN ($1, $2)`, [PLATFORM_APPLICATION_ID, appB]);
    expect(rows).toEqual([]);
    for (const path of Object.keys(tenantSubs)) {
      expect(receiver.received.filter((r) => r.path === path).map((r) => r.body), `${path} got something`).toEqual([]);
    }
    // The forwarded partner event went to the internal service only.
    expect(receiver.received.filter((r) => r.body.includes(PARTNER_MARKER)).map((r) => r.path)).toEqual(["/internal-forward"]);
  });

  it("Must show 1: walked with keys of app_default and of another application, no operation reaches B or the platform", async () => {
    const snapshot = async () => ({
      subs: await Promise.all([platform.alertSub, platform.forwardSub, b.sub, b.alertSub].map(async (id) => {
        const { updatedAt: _u, health: _h, ...s } = await t.api("GET", `/subscriptions/${id}`);
        return s;
      })),
      platformEvents: (await t.api("GET", `/events?applicationId=${PLATFORM_APPLICATION_ID}&limit=1000`)).events.map((e: Json) => e.id).sort(),
      bEvents: (await t.api("GET", `/events?applicationId=${appB}&limit=1000`)).events.map((e: Json) => e.id).sort(),
      deliveries: (await t.api("GET", "/deliveries?limit=1000")).deliveries.filter((d: Json) => ![tenantSubs["/d-star"], tenantSubs["/d-alerts"], tenantSubs["/a-star"], tenantSubs["/a-alerts"]].includes(d.subscriptionId))
        .map((d: Json) => `${d.id} ${d.status} ${d.replays ?? ""}`).sort(),
    });
    const before = await snapshot();
    // Ids and text no application key other than B's (and, for the platform's, none) may be shown.
    const forbidden = [appB, b.sub, b.alertSub, b.event, b.dead, platform.alertSub, platform.forwardSub, platform.alertEvent, platform.forwardEvent,
      platform.alertDelivery, platform.forwardDelivery, platform.quarantineAlert, platform.alertUrl, platform.forwardUrl, PARTNER_MARKER, PLATFORM_APPLICATION_ID];
    const targets: Record<string, string[]> = {
      subscription: [platform.alertSub!, platform.forwardSub!, b.sub!],
      event: [platform.alertEvent!, platform.forwardEvent!, platform.quarantineAlert!, b.event!],
      delivery: [platform.alertDelivery!, platform.forwardDelivery!, b.dead!],
      deadLetter: [platform.alertDelivery!, platform.forwardDelivery!, b.dead!],
      application: [PLATFORM_APPLICATION_ID, appB],
    };
    const cross = (app: string): Record<string, unknown> => ({
      createSubscription: { url: "https://example.com/x", eventTypes: ["*"], applicationId: app },
      sendEvent: { type: "scope.x", data: 1, applicationId: app },
      sendEvents: { events: [{ type: "scope.x", data: 1, applicationId: app }] },
      replayDeadLetters: { ids: [b.dead, platform.alertDelivery, platform.forwardDelivery] },
    });
    const { operations } = authenticatedOperations(document);
    let requests = 0;
    for (const [who, token] of [["app_default write", keys.dWrite], ["app_default read-only", keys.dRead], ["another application's", keys.aWrite]] as const) {
      for (const o of operations) {
        const access = o.op["x-access"] as { action: string; audience: string; resource?: string; param?: string };
        const what = `${o.method} ${o.path} (${o.op.operationId}) with the ${who} key`;
        const send = async (path: string, body?: unknown) => {
          requests++;
          const r = await call(token!, o.method, path, body ?? (o.method === "GET" ? undefined : {}));
          expect(r.status, `${what} → ${path}: ${r.text.slice(0, 300)}`).not.toBe(500);
          if (access.audience === "operator") expect(r.status, `${what} → ${path}: operator-only`).toBe(403);
          return r;
        };
        // What the caller sent (`named`) may be echoed, as for any missing id.
        const check = (r: { text: string }, path: string, named: string[] = []) => {
          for (const s of forbidden.filter((x) => !named.some((n) => n.includes(x)))) expect(r.text, `${what} → ${path} shows ${s}`).not.toContain(s);
        };
        if (access.resource) {
          const ids = targets[access.resource];
          if (!ids) throw new Error(`platformResources.test.ts knows no resource kind ${access.resource}: add its B and platform ids to targets`);
          for (const id of ids) {
            const path = o.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(name === (access.param ?? "id") ? id : "x"));
            const r = await send(path);
            if (access.audience === "application") expect(r.status, `${what} → ${path}: ${r.text.slice(0, 300)}`).toBe(access.action === "write" && who.includes("read-only") ? 403 : 404);
            check(r, path, [id]);
          }
        } else if (o.method === "GET") {
          const r = await send(o.path.replace(/\{(\w+)\}/g, "x"));
          check(r, o.path);
          if ((o.op.parameters as Json[] | undefined)?.some((p) => p.name === "applicationId")) {
            for (const app of [PLATFORM_APPLICATION_ID, appB]) {
              const named = await send(`${o.path}?applicationId=${app}`);
              if (access.audience === "application") expect(named.status, `${what}?applicationId=${app}`).toBe(404);
              check(named, o.path, [app]);
            }
          }
        } else {
          for (const app of [PLATFORM_APPLICATION_ID, appB]) {
            const body = cross(app)[o.op.operationId as string] ?? {};
            const r = await send(o.path.replace(/\{(\w+)\}/g, "x"), body);
            if (r.status === 200) expect(JSON.parse(r.text).replayed, what).toEqual([]);
            check(r, o.path, [app, ...((body as { ids?: string[] }).ids ?? [])]);
          }
        }
      }
    }
    expect(requests).toBeGreaterThan(3 * 40);
    expect(await snapshot()).toEqual(before);
    // The scope is not a blanket refusal: D still manages its own subscriptions.
    const own = await asKey(keys.dWrite!, "GET", "/subscriptions");
    expect(own.subscriptions.map((s: Json) => s.id).sort()).toEqual([tenantSubs["/d-star"], tenantSubs["/d-alerts"]].sort());
    // The platform still works: the next alert reaches the operator's URL, not a tenant's.
    expect((await t.api("GET", `/subscriptions/${platform.alertSub}`)).url).toBe(platform.alertUrl);
  }, 300_000);
});
