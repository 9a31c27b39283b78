/**
 * Must show 1: `/openapi.json` is a valid OpenAPI 3.1 document by an independent validator
 * (@readme/openapi-parser), and every documented operation is sent to the running server, its
 * successes and its errors, each answer's status being one the document lists for it and its body
 * valid against that answer's schema (ajv, JSON Schema 2020-12). An operation added without a
 * sample here, or a route left out of the document, fails the test: the spec cannot drift.
 */
import { compileErrors, validate } from "@readme/openapi-parser";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, expect, it } from "vitest";
import { generateSecret, sign } from "../../shared/outbound/signature.js";
import { startTelemetry, type Telemetry } from "../../shared/telemetry/sdk.js";
import { telemetrySettings } from "../../shared/telemetry/settings.js";
import { describeEachBackend } from "../support/databases.js";
import { eventually, makeDeadLetter, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

type Json = Record<string, any>;

interface Sample {
  operationId: string;
  method: string;
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  /** Sent as is (with `contentType`), instead of `body` as JSON. */
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
  /** null: no token; a string: that token. */
  token?: string | null;
  status: number;
}

/** Routes that are deliberately not operations of the API: the admin page's static files. */
const UNDOCUMENTED = ["GET /", "GET /admin", "GET /admin/:file", "GET /portal", "GET /portal/assets/:file"];

const PARTNER_SECRET = generateSecret();

describeEachBackend("OpenAPI document", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  let document: Json;
  let telemetry: Telemetry | undefined;
  beforeAll(async () => {
    receiver = await startTestReceiver();
    // GET /metrics answers 200 only with the Prometheus reader installed (docs/operations.md).
    telemetry = await startTelemetry(telemetrySettings({ OTEL_METRICS_EXPORTER: "prometheus" })!, {});
    t = await startTestPlatform(ctx.db, { PARTNERS: JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [PARTNER_SECRET] }, fwd: { scheme: "standard-webhooks", secrets: [PARTNER_SECRET], forward: true } }) }, { telemetry });
    document = await (await fetch(`${t.baseUrl}/openapi.json`)).json();
  }, 180_000);
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
    await telemetry?.shutdown();
  });

  it("is valid OpenAPI 3.1 by @readme/openapi-parser, and documents every route but the admin page's files", async () => {
    expect(document.openapi).toBe("3.1.0");
    const result = await validate(structuredClone(document) as never);
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
    expect(result.warnings).toEqual([]);
    const documented = new Set(Object.entries(document.paths as Json).flatMap(([path, ops]) => Object.keys(ops as Json).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`)));
    for (const route of t.platform.routes) {
      const key = `${route.method} ${route.path}`;
      if (!UNDOCUMENTED.includes(key)) expect(documented, key).toContain(key);
    }
    const page = await fetch(`${t.baseUrl}/docs`);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    for (const op of operations()) expect(html).toContain(`id="${op.operationId}"`);
  });

  function operations(): { method: string; path: string; operationId: string; op: Json }[] {
    return Object.entries(document.paths as Json).flatMap(([path, ops]) =>
      Object.entries(ops as Json).map(([method, op]) => ({ method, path, operationId: (op as Json).operationId as string, op: op as Json })));
  }

  it("every operation answers as documented, successes and errors alike", async () => {
    receiver.answer = 200;
    // What the samples refer to: a subscription, an event, a dead letter, an inbox entry, an order.
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/ok`, eventTypes: ["spec.*"] });
    const sent = await t.api("POST", "/events", { id: "spec-1", type: "spec.a", data: { n: 1 } });
    const deliveryId: string = sent.deliveries[0].id;
    await eventually("delivered", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(deliveryId)}`)).status === "delivered");
    receiver.answer = ({ path }) => (path === "/dead" ? 400 : 200);
    const dead = await makeDeadLetter(t, `${receiver.url}/dead`, "spec-dead");
    const dead2 = await makeDeadLetter(t, `${receiver.url}/dead`, "spec-dead-2");
    const body = JSON.stringify({ type: "order.created", data: { order_id: "spec-order", amount_cents: 100, currency: "EUR" } });
    const ts = Math.floor(Date.now() / 1000);
    const signed = { "webhook-id": "spec-msg-1", "webhook-timestamp": String(ts), "webhook-signature": `v1,${sign(PARTNER_SECRET, "spec-msg-1", ts, body)}` };
    const stored = await (await fetch(`${t.baseUrl}/webhooks/shop`, { method: "POST", headers: { "content-type": "application/json", ...signed }, body })).json();
    await eventually("the inbox entry settled", async () => (await t.api("GET", `/inbox/${stored.inboxId}`)).processedAt !== null);
    // The sample order domain may or may not take this partner's events: the order is written here.
    await ctx.db.query("INSERT INTO inbound_entities (machine, entity_id, state, created_at, updated_at) VALUES ('order', 'spec-order', 'created', now(), now()) ON CONFLICT DO NOTHING");
    const gone = await t.api("POST", "/subscriptions", { url: `${receiver.url}/gone`, eventTypes: ["spec.*"] });
    const toDelete = await t.api("POST", "/subscriptions", { url: `${receiver.url}/del`, eventTypes: ["nothing.here"] });
    const d = encodeURIComponent(deliveryId);
    const s = sub.id;
    const missingUuid = "00000000-0000-4000-8000-000000000000";
    // Tenancy (issue 17): applications and keys of each scope, for their operations and the 403s.
    const app = await t.api("POST", "/applications", { name: "spec-app" });
    const appSub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/app`, eventTypes: ["spec.*"], applicationId: app.id });
    const emptyApp = await t.api("POST", "/applications", { name: "spec-empty" });
    const appKey = await t.api("POST", "/keys", { applicationId: app.id, description: "spec" });
    const readKey = await t.api("POST", "/keys", { access: "read" });
    const doomedKey = await t.api("POST", "/keys", {});
    // The customer portal (issue 32): a link to open, a session (its cookie, its CSRF token), and a link and a session to revoke.
    const portalLink = async (body: Json = {}) => t.api("POST", `/applications/${app.id}/portal-links`, body);
    const openSession = async (token: string) => {
      const res = await fetch(`${t.baseUrl}/portal/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ token }) });
      const body = (await res.json()) as { sessionId: string; csrfToken: string };
      return { cookie: res.headers.get("set-cookie")!.split(";")[0]!, sessionId: body.sessionId, csrfToken: body.csrfToken };
    };
    const toOpen = await portalLink({ access: "write" });
    const portal = await openSession((await portalLink({ access: "write" })).token);
    const doomedLink = await portalLink();
    const doomedSession = await openSession((await portalLink()).token);
    // Ordered delivery (issue 15): a key blocked by a dead letter, another delivery waiting behind it.
    const orderedSub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/dead`, eventTypes: ["spec.ordered"], ordered: true, maxAttempts: 1 });
    await t.api("POST", "/events/batch", { events: [1, 2].map((n) => ({ id: `spec-o${n}`, type: "spec.ordered", data: n, orderingKey: "order/1" })) });
    const keysOf = `/subscriptions/${orderedSub.id}/ordering-keys`;
    await eventually("the ordering key blocked", async () => (await t.api("GET", keysOf)).orderingKeys[0]?.blocked === true);
    // webhooks listen (issue 32): a listener holding one delivery, another to detach.
    const listenSub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/listened`, eventTypes: ["spec.listen"] });
    const ls = `/subscriptions/${listenSub.id}/listeners`;
    const listener = await t.api("POST", ls, { leaseSeconds: 60 });
    await t.api("POST", "/events", { id: "spec-listen-1", type: "spec.listen", data: 1 });
    const pulled = await t.api("POST", `${ls}/${listener.id}/pull`, { waitSeconds: 10 });
    const doomedListener = await t.api("POST", ls, {});
    await t.api("DELETE", `${ls}/${doomedListener.id}`);

    const samples: Sample[] = [
      { operationId: "health", method: "GET", path: "/healthz", token: null, status: 200 },
      { operationId: "openApiDocument", method: "GET", path: "/openapi.json", token: null, status: 200 },
      { operationId: "reference", method: "GET", path: "/docs", token: null, status: 200 },

      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { url: `${receiver.url}/new`, eventTypes: ["a.b"], headers: { "x-k": "v" } }, status: 201 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { url: `${receiver.url}/bf`, eventTypes: ["spec.*"], backfill: { since: new Date(Date.now() - 3_600_000).toISOString() } }, status: 201 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { url: `${receiver.url}/v1a`, eventTypes: ["a.b"], signatureScheme: "v1a" }, status: 201 },
      // Endpoint authentication (issue 29): answered without its secret part.
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { url: `${receiver.url}/basic`, eventTypes: ["a.b"], auth: { kind: "basic", username: "u", password: "p" } }, status: 201 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { url: `${receiver.url}/oauth`, eventTypes: ["a.b"], auth: { kind: "oauth2ClientCredentials", tokenUrl: `${receiver.url}/token`, clientId: "c", clientSecret: "s", scope: "hooks" } }, status: 201 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { url: `${receiver.url}/mtls`, eventTypes: ["a.b"], auth: { kind: "mtls", certificate: "not pem", privateKey: "no" } }, status: 400 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { url: "not a url", eventTypes: [] }, status: 400 },
      // Issue 31: destinations beyond HTTP, answered with their settings and the readable part of their credentials.
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { destination: { kind: "sqs", queueUrl: "https://sqs.eu-west-1.amazonaws.com/123456789012/spec.fifo", credentials: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "spec-secret" } }, eventTypes: ["a.b"] }, status: 201 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { destination: { kind: "eventbridge", eventBus: "orders", region: "eu-west-1" }, eventTypes: ["a.b"] }, status: 201 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { destination: { kind: "servicebus", topic: "orders", credentials: { connectionString: "Endpoint=sb://spec.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=k" } }, eventTypes: ["a.b"] }, status: 201 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { destination: { kind: "pubsub", topic: "projects/spec-project/topics/orders" }, eventTypes: ["a.b"] }, status: 201 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { destination: { kind: "rabbitmq", url: "amqp://127.0.0.1:5672/", exchange: "", routingKey: "spec", credentials: { username: "guest", password: "guest" } }, eventTypes: ["a.b"] }, status: 201 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { destination: { kind: "sns", topicArn: "not an arn" }, eventTypes: ["a.b"] }, status: 400 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { url: `${receiver.url}/both`, destination: { kind: "pubsub", topic: "projects/spec-project/topics/orders" }, eventTypes: ["a.b"] }, status: 400 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", raw: "url=x", contentType: "application/x-www-form-urlencoded", status: 415 },
      { operationId: "createSubscription", method: "POST", path: "/subscriptions", body: { url: "https://example.com", eventTypes: ["a"] }, token: "wrong-token-wrong-token", status: 401 },
      { operationId: "listSubscriptions", method: "GET", path: "/subscriptions", query: { limit: "1" }, status: 200 },
      { operationId: "listSubscriptions", method: "GET", path: "/subscriptions", query: { paused: "maybe" }, status: 400 },
      { operationId: "getSubscription", method: "GET", path: `/subscriptions/${s}`, status: 200 },
      { operationId: "getSubscription", method: "GET", path: "/subscriptions/sub_missing", status: 404 },
      { operationId: "updateSubscription", method: "PATCH", path: `/subscriptions/${s}`, body: { description: "edited", headers: { "x-tenant": "a" } }, status: 200 },
      { operationId: "updateSubscription", method: "PATCH", path: `/subscriptions/${s}`, body: { headers: { "webhook-id": "x" } }, status: 400 },
      { operationId: "updateSubscription", method: "PATCH", path: `/subscriptions/${s}`, body: { auth: { kind: "basic", username: "u2", password: "p2" } }, status: 200 },
      { operationId: "updateSubscription", method: "PATCH", path: `/subscriptions/${s}`, body: { auth: null }, status: 200 },
      { operationId: "updateSubscription", method: "PATCH", path: `/subscriptions/${toDelete.id}`, body: { destination: { kind: "sns", topicArn: "arn:aws:sns:eu-west-1:123456789012:spec" } }, status: 200 },
      { operationId: "updateSubscription", method: "PATCH", path: "/subscriptions/sub_missing", body: { description: "x" }, status: 404 },
      { operationId: "pauseSubscription", method: "POST", path: `/subscriptions/${gone.id}/pause`, status: 200 },
      { operationId: "pauseSubscription", method: "POST", path: "/subscriptions/sub_missing/pause", status: 404 },
      { operationId: "resumeSubscription", method: "POST", path: `/subscriptions/${gone.id}/resume`, status: 200 },
      { operationId: "resumeSubscription", method: "POST", path: "/subscriptions/sub_missing/resume", status: 404 },
      { operationId: "enableSubscription", method: "POST", path: `/subscriptions/${s}/enable`, status: 200 },
      { operationId: "enableSubscription", method: "POST", path: "/subscriptions/sub_missing/enable", status: 404 },
      { operationId: "rotateSecrets", method: "POST", path: `/subscriptions/${gone.id}/secrets`, status: 200 },
      { operationId: "rotateSecrets", method: "POST", path: `/subscriptions/${gone.id}/secrets`, body: { secrets: ["whsec_short"] }, status: 400 },
      // Issue 17, v1a (ed25519): moving to it, then its public keys.
      { operationId: "rotateSecrets", method: "POST", path: `/subscriptions/${gone.id}/secrets`, body: { signatureScheme: "v1a" }, status: 200 },
      { operationId: "getPublicKeys", method: "GET", path: `/subscriptions/${gone.id}/public-keys`, status: 200 },
      { operationId: "getPublicKeys", method: "GET", path: "/subscriptions/sub_missing/public-keys", status: 404 },
      { operationId: "reencryptSecrets", method: "POST", path: "/encryption-keys/reencrypt", status: 200 },
      { operationId: "reencryptSecrets", method: "POST", path: "/encryption-keys/reencrypt", token: "wrong-token-wrong-token", status: 401 },
      { operationId: "encryptionKeyStatus", method: "GET", path: "/encryption-keys", status: 200 },
      { operationId: "encryptionKeyStatus", method: "GET", path: "/encryption-keys", token: "wrong-token-wrong-token", status: 401 },
      { operationId: "metrics", method: "GET", path: "/metrics", status: 200 },
      { operationId: "metrics", method: "GET", path: "/metrics", token: null, status: 401 },
      { operationId: "sendTestEvent", method: "POST", path: `/subscriptions/${s}/test`, status: 201 },
      { operationId: "sendTestEvent", method: "POST", path: `/subscriptions/${s}/test`, body: { type: "Not A Type" }, status: 400 },
      { operationId: "sendTestEvent", method: "POST", path: "/subscriptions/sub_missing/test", status: 404 },
      { operationId: "deleteSubscription", method: "DELETE", path: `/subscriptions/${toDelete.id}`, status: 200 },
      { operationId: "deleteSubscription", method: "DELETE", path: `/subscriptions/${toDelete.id}`, status: 404 },

      { operationId: "sendEvent", method: "POST", path: "/events", body: { id: "spec-2", type: "spec.b", data: null }, status: 201 },
      { operationId: "sendEvent", method: "POST", path: "/events", body: { id: "spec-2", type: "spec.b", data: null }, status: 200 },
      { operationId: "sendEvent", method: "POST", path: "/events", body: { id: "spec-2", type: "spec.b", data: { other: true } }, status: 409 },
      { operationId: "sendEvent", method: "POST", path: "/events", body: { type: "spec.b", data: "x".repeat(300_000) }, status: 413 },
      { operationId: "sendEvent", method: "POST", path: "/events", raw: "{not json", contentType: "application/json", status: 400 },
      { operationId: "sendEvents", method: "POST", path: "/events/batch", body: { events: [{ id: "spec-3", type: "spec.c", data: 1 }] }, status: 201 },
      { operationId: "sendEvents", method: "POST", path: "/events/batch", body: { events: [{ id: "spec-3", type: "spec.c", data: 1 }] }, status: 200 },
      { operationId: "sendEvents", method: "POST", path: "/events/batch", body: { events: [{ type: "" }] }, status: 400 },
      { operationId: "listEvents", method: "GET", path: "/events", query: { type: "spec.a", limit: "1" }, status: 200 },
      { operationId: "listEvents", method: "GET", path: "/events", query: { since: "not-a-time" }, status: 400 },
      { operationId: "getEvent", method: "GET", path: "/events/spec-1", status: 200 },
      { operationId: "getEvent", method: "GET", path: "/events/missing", status: 404 },
      { operationId: "resendEvent", method: "POST", path: "/events/spec-1/resend", status: 201 },
      { operationId: "resendEvent", method: "POST", path: "/events/spec-1/resend", body: { subscriptionId: dead.subscriptionId }, status: 409 },
      { operationId: "resendEvent", method: "POST", path: "/events/spec-1/resend", body: { unknown: 1 }, status: 400 },
      { operationId: "resendEvent", method: "POST", path: "/events/missing/resend", status: 404 },

      { operationId: "listDeliveries", method: "GET", path: "/deliveries", query: { limit: "2" }, status: 200 },
      { operationId: "listDeliveries", method: "GET", path: "/deliveries", query: { status: "lost" }, status: 400 },
      { operationId: "getDelivery", method: "GET", path: `/deliveries/${d}`, status: 200 },
      { operationId: "getDelivery", method: "GET", path: "/deliveries/missing", status: 404 },
      { operationId: "listAttempts", method: "GET", path: `/deliveries/${d}/attempts`, status: 200 },
      { operationId: "listAttempts", method: "GET", path: `/deliveries/${d}/attempts`, query: { cursor: "x" }, status: 400 },
      { operationId: "listAttempts", method: "GET", path: "/deliveries/missing/attempts", status: 404 },

      { operationId: "listDeadLetters", method: "GET", path: "/dead-letters", query: { eventType: "test.spec_dead" }, status: 200 },
      { operationId: "listDeadLetters", method: "GET", path: "/dead-letters", query: { until: "tomorrow" }, status: 400 },
      { operationId: "countDeadLetters", method: "GET", path: "/dead-letters/count", query: { eventType: "test.spec_dead" }, status: 200 },
      { operationId: "countDeadLetters", method: "GET", path: "/dead-letters/count", query: { since: "yesterday" }, status: 400 },
      { operationId: "getDeadLetter", method: "GET", path: `/dead-letters/${encodeURIComponent(dead.deliveryId)}`, status: 200 },
      { operationId: "getDeadLetter", method: "GET", path: `/dead-letters/${d}`, status: 404 },
      { operationId: "replayDeadLetter", method: "POST", path: `/dead-letters/${encodeURIComponent(dead.deliveryId)}/replay`, status: 200 },
      { operationId: "replayDeadLetter", method: "POST", path: `/dead-letters/${d}/replay`, status: 409 },
      { operationId: "replayDeadLetter", method: "POST", path: "/dead-letters/missing/replay", status: 404 },
      { operationId: "replayDeadLetters", method: "POST", path: "/dead-letters/replay", body: { filter: { subscriptionId: dead2.subscriptionId, since: "2000-01-01T00:00:00Z" } }, status: 200 },
      { operationId: "replayDeadLetters", method: "POST", path: "/dead-letters/replay", body: { ids: [] }, status: 400 },

      { operationId: "listOrderingKeys", method: "GET", path: keysOf, query: { blocked: "true", limit: "1" }, status: 200 },
      { operationId: "listOrderingKeys", method: "GET", path: keysOf, query: { blocked: "maybe" }, status: 400 },
      { operationId: "listOrderingKeys", method: "GET", path: "/subscriptions/sub_missing/ordering-keys", status: 404 },
      { operationId: "skipOrderingKey", method: "POST", path: `${keysOf}/order%2F1/skip`, body: { deliveryId: "not-the-head" }, status: 409 },
      { operationId: "skipOrderingKey", method: "POST", path: `${keysOf}/order%2F1/skip`, body: { deliveryId: `spec-o1:${orderedSub.id}` }, status: 200 },
      { operationId: "skipOrderingKey", method: "POST", path: `${keysOf}/no%20key/skip`, status: 400 },
      { operationId: "skipOrderingKey", method: "POST", path: `${keysOf}/missing/skip`, status: 404 },

      { operationId: "receiveWebhook", method: "POST", path: "/webhooks/shop", raw: body, contentType: "application/json", headers: signed, token: null, status: 200 },
      { operationId: "receiveWebhook", method: "POST", path: "/webhooks/shop", raw: body, contentType: "application/json", headers: { ...signed, "webhook-signature": "v1,AAAA" }, token: null, status: 401 },
      { operationId: "receiveWebhook", method: "POST", path: "/webhooks/nobody", raw: body, contentType: "application/json", token: null, status: 404 },
      { operationId: "listInbox", method: "GET", path: "/inbox", query: { partner: "shop", limit: "1" }, status: 200 },
      { operationId: "listInbox", method: "GET", path: "/inbox", query: { status: "lost" }, status: 400 },
      { operationId: "countInbox", method: "GET", path: "/inbox/count", query: { status: "quarantined" }, status: 200 },
      { operationId: "countInbox", method: "GET", path: "/inbox/count", query: { status: "lost" }, status: 400 },
      { operationId: "getInboxEntry", method: "GET", path: `/inbox/${stored.inboxId}`, status: 200 },
      { operationId: "getInboxEntry", method: "GET", path: `/inbox/${missingUuid}`, status: 404 },
      { operationId: "getInboxEntry", method: "GET", path: "/inbox/not-a-uuid", status: 400 },
      { operationId: "replayInboxEntry", method: "POST", path: `/inbox/${stored.inboxId}/replay`, status: 202 },
      { operationId: "replayInboxEntry", method: "POST", path: `/inbox/${missingUuid}/replay`, status: 404 },
      { operationId: "replayInbox", method: "POST", path: "/inbox/replay", body: { partner: "shop" }, status: 202 },
      { operationId: "replayInbox", method: "POST", path: "/inbox/replay", body: { status: "lost" }, status: 400 },
      { operationId: "getEntity", method: "GET", path: "/entities/order/spec-order", status: 200 },
      { operationId: "getEntity", method: "GET", path: "/entities/order/missing", status: 404 },
      { operationId: "deliveriesPerMinute", method: "GET", path: "/stats/deliveries-per-minute", query: { minutes: "5" }, status: 200 },
      { operationId: "deliveriesPerMinute", method: "GET", path: "/stats/deliveries-per-minute", query: { minutes: "0" }, status: 400 },

      { operationId: "whoAmI", method: "GET", path: "/me", token: appKey.key, status: 200 },
      { operationId: "whoAmI", method: "GET", path: "/me", token: `${appKey.key.slice(0, 21)}${"A".repeat(43)}`, status: 401 },
      { operationId: "createApplication", method: "POST", path: "/applications", body: { name: "spec-app-2" }, status: 201 },
      { operationId: "createApplication", method: "POST", path: "/applications", body: { name: "" }, status: 400 },
      { operationId: "createApplication", method: "POST", path: "/applications", body: { name: "x" }, token: appKey.key, status: 403 },
      { operationId: "listApplications", method: "GET", path: "/applications", query: { limit: "1" }, status: 200 },
      { operationId: "listApplications", method: "GET", path: "/applications", query: { limit: "0" }, status: 400 },
      { operationId: "getApplication", method: "GET", path: `/applications/${app.id}`, token: appKey.key, status: 200 },
      { operationId: "getApplication", method: "GET", path: `/applications/${emptyApp.id}`, token: appKey.key, status: 404 },
      { operationId: "deleteApplication", method: "DELETE", path: `/applications/${app.id}`, status: 409 },
      { operationId: "deleteApplication", method: "DELETE", path: "/applications/app_default", query: { cascade: "true" }, status: 409 },
      { operationId: "deleteApplication", method: "DELETE", path: `/applications/${emptyApp.id}`, status: 200 },
      { operationId: "deleteApplication", method: "DELETE", path: `/applications/${emptyApp.id}`, status: 404 },
      { operationId: "createApiKey", method: "POST", path: "/keys", body: { applicationId: app.id, access: "read" }, status: 201 },
      { operationId: "createApiKey", method: "POST", path: "/keys", body: { access: "admin" }, status: 400 },
      { operationId: "createApiKey", method: "POST", path: "/keys", token: readKey.key, status: 403 },
      { operationId: "listApiKeys", method: "GET", path: "/keys", query: { active: "true" }, token: readKey.key, status: 200 },
      { operationId: "listApiKeys", method: "GET", path: "/keys", query: { active: "maybe" }, status: 400 },
      { operationId: "revokeApiKey", method: "DELETE", path: `/keys/${doomedKey.id}`, status: 200 },
      { operationId: "revokeApiKey", method: "DELETE", path: `/keys/${doomedKey.id}`, status: 404 },
      { operationId: "listAuditLog", method: "GET", path: "/audit-log", query: { operation: "createApiKey", limit: "5" }, status: 200 },
      { operationId: "listAuditLog", method: "GET", path: "/audit-log", query: { cursor: "x" }, status: 400 },
      // A key's scope, answered as documented: a read-only key changes nothing (403), an application
      // key sees its own application only (another's resource: 404) and no operator operation (403).
      { operationId: "sendEvent", method: "POST", path: "/events", body: { type: "spec.b", data: null }, token: readKey.key, status: 403 },
      { operationId: "sendEvent", method: "POST", path: "/events", body: { type: "spec.b", data: null }, token: appKey.key, status: 201 },
      { operationId: "getSubscription", method: "GET", path: `/subscriptions/${appSub.id}`, token: appKey.key, status: 200 },
      { operationId: "getSubscription", method: "GET", path: `/subscriptions/${s}`, token: appKey.key, status: 404 },
      { operationId: "listInbox", method: "GET", path: "/inbox", token: appKey.key, status: 403 },

      // The event catalogue (issue 30).
      { operationId: "createEventType", method: "POST", path: "/event-types", body: { name: "spec.typed", schema: { type: "object", required: ["n"] }, examples: [{ n: 1 }], validation: "enforce" }, status: 201 },
      { operationId: "createEventType", method: "POST", path: "/event-types", body: { name: "spec.typed" }, status: 409 },
      { operationId: "createEventType", method: "POST", path: "/event-types", body: { name: "spec.bad", schema: { type: "nope" } }, status: 400 },
      { operationId: "listEventTypes", method: "GET", path: "/event-types", query: { limit: "1" }, status: 200 },
      { operationId: "listEventTypes", method: "GET", path: "/event-types", query: { includeDeprecated: "maybe" }, status: 400 },
      { operationId: "getEventType", method: "GET", path: "/event-types/spec.typed", status: 200 },
      { operationId: "getEventType", method: "GET", path: "/event-types/spec.missing", status: 404 },
      { operationId: "updateEventType", method: "PATCH", path: "/event-types/spec.typed", body: { description: "typed" }, status: 200 },
      { operationId: "updateEventType", method: "PATCH", path: "/event-types/spec.typed", body: { validation: "sometimes" }, status: 400 },
      { operationId: "sendEvent", method: "POST", path: "/events", body: { type: "spec.typed", data: { m: 1 } }, status: 422 },
      { operationId: "sendEvents", method: "POST", path: "/events/batch", body: { events: [{ type: "spec.typed", data: {} }] }, status: 422 },
      { operationId: "importEventTypes", method: "POST", path: "/event-types/import", body: { document: { openapi: "3.1.0", webhooks: { "spec.imported": { post: { requestBody: { content: { "application/json": { schema: { type: "object" } } } } } } } } }, status: 200 },
      { operationId: "importEventTypes", method: "POST", path: "/event-types/import", body: { document: { openapi: "3.1.0" } }, status: 400 },
      { operationId: "deleteEventType", method: "DELETE", path: "/event-types/spec.imported", status: 200 },
      { operationId: "deleteEventType", method: "DELETE", path: "/event-types/spec.imported", status: 404 },
      { operationId: "getCatalogueSettings", method: "GET", path: "/catalogue-settings", status: 200 },
      { operationId: "getCatalogueSettings", method: "GET", path: "/catalogue-settings", query: { other: "x" }, status: 400 },
      { operationId: "setCatalogueSettings", method: "PUT", path: "/catalogue-settings", body: { strict: false }, status: 200 },
      { operationId: "setCatalogueSettings", method: "PUT", path: "/catalogue-settings", body: { strict: "yes" }, status: 400 },
      { operationId: "testTransformation", method: "POST", path: "/transformations/test", body: { transformation: "(e) => ({ body: { n: e.data.n } })", eventType: "spec.typed" }, status: 200 },
      { operationId: "testTransformation", method: "POST", path: "/transformations/test", body: { transformation: "(e) => { while (true) {} }", event: { type: "x", data: 1 } }, status: 200 },
      { operationId: "testTransformation", method: "POST", path: "/transformations/test", body: { transformation: "42", event: { type: "x", data: 1 } }, status: 400 },

      // The customer portal (issue 32): links, sessions, settings, and what the portal shows.
      { operationId: "createPortalLink", method: "POST", path: `/applications/${app.id}/portal-links`, body: { access: "read", expiresInMinutes: 5, returnUrl: "https://spec.example/back" }, status: 201 },
      { operationId: "createPortalLink", method: "POST", path: `/applications/${app.id}/portal-links`, body: { expiresInMinutes: 0 }, status: 400 },
      { operationId: "createPortalLink", method: "POST", path: `/applications/${app.id}/portal-links`, token: appKey.key, status: 403 },
      { operationId: "listPortalLinks", method: "GET", path: `/applications/${app.id}/portal-links`, query: { limit: "1" }, status: 200 },
      { operationId: "listPortalLinks", method: "GET", path: "/applications/app_missing/portal-links", status: 404 },
      { operationId: "openPortalSession", method: "POST", path: "/portal/sessions", body: { token: toOpen.token }, token: null, status: 201 },
      { operationId: "openPortalSession", method: "POST", path: "/portal/sessions", body: { token: toOpen.token }, token: null, status: 403 },
      { operationId: "getPortalSession", method: "GET", path: "/portal/session", token: null, headers: { cookie: portal.cookie }, status: 200 },
      { operationId: "getPortalSession", method: "GET", path: "/portal/session", status: 404 },
      { operationId: "getPortalSettings", method: "GET", path: `/applications/${app.id}/portal-settings`, token: null, headers: { cookie: portal.cookie }, status: 200 },
      { operationId: "getPortalSettings", method: "GET", path: "/applications/app_missing/portal-settings", status: 404 },
      { operationId: "updatePortalSettings", method: "PATCH", path: `/applications/${app.id}/portal-settings`, body: { frameAncestors: ["https://spec.example"], theme: { name: "Spec", accentColor: "#123456" } }, status: 200 },
      { operationId: "updatePortalSettings", method: "PATCH", path: `/applications/${app.id}/portal-settings`, body: { frameAncestors: ["not an origin"] }, status: 400 },
      { operationId: "getSubscriptionSecrets", method: "GET", path: `/subscriptions/${appSub.id}/secrets`, token: null, headers: { cookie: portal.cookie }, status: 200 },
      { operationId: "getSubscriptionSecrets", method: "GET", path: `/subscriptions/${s}/secrets`, token: null, headers: { cookie: portal.cookie }, status: 404 },
      { operationId: "getSubscriptionStats", method: "GET", path: `/subscriptions/${s}/stats`, query: { minutes: "60" }, status: 200 },
      { operationId: "getSubscriptionStats", method: "GET", path: `/subscriptions/${s}/stats`, query: { minutes: "1" }, status: 400 },
      { operationId: "endPortalSession", method: "DELETE", path: "/portal/session", token: null, headers: { cookie: portal.cookie }, status: 403 },
      { operationId: "endPortalSession", method: "DELETE", path: "/portal/session", token: null, headers: { cookie: portal.cookie, "x-csrf-token": portal.csrfToken }, status: 200 },
      { operationId: "endPortalSession", method: "DELETE", path: "/portal/session", status: 404 },
      { operationId: "revokePortalLink", method: "DELETE", path: `/portal-links/${doomedLink.id}`, status: 200 },
      { operationId: "revokePortalLink", method: "DELETE", path: `/portal-links/${doomedLink.id}`, status: 404 },
      { operationId: "revokePortalSession", method: "DELETE", path: `/portal-sessions/${doomedSession.sessionId}`, status: 200 },
      { operationId: "revokePortalSession", method: "DELETE", path: `/portal-sessions/${doomedSession.sessionId}`, status: 404 },

      // Inbound forwarding to several destinations (issue 30 item 4).
      { operationId: "addForwardDestination", method: "POST", path: "/inbound/partners/fwd/forwarding/destinations", body: { name: "eur", url: `${receiver.url}/eur`, filter: { "data.data.currency": "EUR" } }, status: 201 },
      { operationId: "addForwardDestination", method: "POST", path: "/inbound/partners/fwd/forwarding/destinations", body: { name: "eur", url: `${receiver.url}/eur` }, status: 409 },
      { operationId: "addForwardDestination", method: "POST", path: "/inbound/partners/fwd/forwarding/destinations", body: { name: "bad", url: `${receiver.url}/x`, filter: { "data.a": { $gtt: 1 } } }, status: 400 },
      { operationId: "addForwardDestination", method: "POST", path: "/inbound/partners/shop/forwarding/destinations", body: { name: "x", url: `${receiver.url}/x` }, status: 409 },
      { operationId: "getForwarding", method: "GET", path: "/inbound/partners/fwd/forwarding", status: 200 },
      { operationId: "listForwarding", method: "GET", path: "/inbound/forwarding", status: 200 },
      { operationId: "listForwarding", method: "GET", path: "/inbound/forwarding", token: appKey.key, status: 403 },
      { operationId: "getForwarding", method: "GET", path: "/inbound/partners/nobody/forwarding", status: 404 },
      { operationId: "updateForwardDestination", method: "PATCH", path: "/inbound/partners/fwd/forwarding/destinations/eur", body: { transformation: "(e) => ({ body: e })" }, status: 200 },
      { operationId: "updateForwardDestination", method: "PATCH", path: "/inbound/partners/fwd/forwarding/destinations/eur", body: {}, status: 400 },
      { operationId: "updateForwardDestination", method: "PATCH", path: "/inbound/partners/fwd/forwarding/destinations/missing", body: { url: `${receiver.url}/y` }, status: 404 },
      { operationId: "removeForwardDestination", method: "DELETE", path: "/inbound/partners/fwd/forwarding/destinations/eur", status: 200 },
      { operationId: "removeForwardDestination", method: "DELETE", path: "/inbound/partners/fwd/forwarding/destinations/eur", status: 404 },
      // webhooks listen (issue 32): attach, pull, answer, heartbeat, detach.
      { operationId: "attachListener", method: "POST", path: ls, body: { forwardTo: "http://localhost:3000/hooks", leaseSeconds: 10 }, status: 201 },
      { operationId: "attachListener", method: "POST", path: ls, body: { leaseSeconds: 1 }, status: 400 },
      { operationId: "attachListener", method: "POST", path: ls, token: readKey.key, status: 403 },
      { operationId: "listListeners", method: "GET", path: ls, status: 200 },
      { operationId: "listListeners", method: "GET", path: "/subscriptions/sub_missing/listeners", status: 404 },
      { operationId: "pullListenerDeliveries", method: "POST", path: `${ls}/${listener.id}/pull`, body: { waitSeconds: 0 }, status: 200 },
      { operationId: "pullListenerDeliveries", method: "POST", path: `${ls}/${listener.id}/pull`, body: { waitSeconds: 60 }, status: 400 },
      { operationId: "pullListenerDeliveries", method: "POST", path: `${ls}/${doomedListener.id}/pull`, status: 410 },
      { operationId: "answerListenerDeliveries", method: "POST", path: `${ls}/${listener.id}/answers`, body: { answers: [{ deliveryId: pulled.deliveries[0].id, status: 200, durationMs: 3, responseExcerpt: "ok", responseHeaders: { "content-type": "text/plain" } }] }, status: 200 },
      { operationId: "answerListenerDeliveries", method: "POST", path: `${ls}/${listener.id}/answers`, body: { answers: [{ deliveryId: deliveryId, status: 200, durationMs: 1 }] }, status: 400 },
      { operationId: "listenerHeartbeat", method: "POST", path: `${ls}/${listener.id}/heartbeat`, body: { holding: [] }, status: 200 },
      { operationId: "listenerHeartbeat", method: "POST", path: `${ls}/not-a-listener/heartbeat`, status: 404 },
      { operationId: "listenerHeartbeat", method: "POST", path: `${ls}/${doomedListener.id}/heartbeat`, status: 410 },
      { operationId: "detachListener", method: "DELETE", path: `${ls}/${listener.id}`, status: 200 },
      { operationId: "detachListener", method: "DELETE", path: `/subscriptions/sub_missing/listeners/${listener.id}`, status: 404 },
    ];

    const ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    const byId = new Map(operations().map((o) => [o.operationId, o]));
    // Every documented operation has a sample that succeeds, and every one that can fail one that does.
    const canOnlySucceed = new Set(["health", "openApiDocument", "reference"]);
    for (const id of byId.keys()) {
      expect(samples.some((x) => x.operationId === id && x.status < 300), `a success sample for ${id}`).toBe(true);
      if (!canOnlySucceed.has(id)) expect(samples.some((x) => x.operationId === id && x.status >= 400), `an error sample for ${id}`).toBe(true);
    }
    for (const sample of samples) {
      const documented = byId.get(sample.operationId);
      expect(documented, `${sample.operationId} is documented`).toBeDefined();
      expect(`${documented!.method.toUpperCase()} ${documented!.path}`).toBe(`${sample.method} ${sample.path.split("/").map((seg, i) => (documented!.path.split("/")[i]?.startsWith("{") ? documented!.path.split("/")[i] : seg)).join("/")}`);
      const url = new URL(t.baseUrl + sample.path);
      for (const [k, v] of Object.entries(sample.query ?? {})) url.searchParams.set(k, v);
      const headers: Record<string, string> = { ...sample.headers };
      const token = sample.token === undefined ? t.token : sample.token;
      if (token) headers.authorization = `Bearer ${token}`;
      let payload: string | undefined;
      if (sample.raw !== undefined) { payload = sample.raw; headers["content-type"] = sample.contentType ?? "application/octet-stream"; }
      else if (sample.body !== undefined) { payload = JSON.stringify(sample.body); headers["content-type"] = "application/json"; }
      const res = await fetch(url, { method: sample.method, headers, body: payload });
      const what = `${sample.method} ${sample.path} (${sample.operationId})`;
      const text = await res.text();
      expect(res.status, `${what}: ${text.slice(0, 300)}`).toBe(sample.status);
      const answer = documented!.op.responses[String(res.status)];
      expect(answer, `${what}: ${res.status} is documented`).toBeDefined();
      const content = answer.content as Json | undefined;
      if (!content) { expect(text, what).toBe(""); continue; }
      const [mediaType, { schema }] = Object.entries(content)[0] as [string, { schema: Json }];
      if (mediaType !== "application/json") { expect(res.headers.get("content-type"), what).toContain(mediaType); continue; }
      expect(res.headers.get("content-type"), what).toContain("application/json");
      const check = ajv.compile(schema);
      const ok = check(JSON.parse(text));
      expect(ok, `${what}: body ${text.slice(0, 400)} against the document: ${ajv.errorsText(check.errors)}`).toBe(true);
    }
    // Over 150 requests, some waiting on the relay: 22 s measured on PGlite at a load average of 22.
  }, 120_000);
});
