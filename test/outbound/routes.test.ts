import fc from "fast-check";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.js";
import { mapPlatformError, startPlatform, type Platform } from "../../shared/platform.js";
import { createHttpServer } from "../../shared/server/router.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { createRelay } from "../../shared/outbound/index.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, startReceiver, waitFor, type Receiver } from "./support/receiver.js";

const TOKEN = "outbound-routes-test-token";

describeEachBackend("outbound management API", (ctx) => {
  let platform: Platform;
  let server: Server;
  let base: string;
  let transport: Transport;
  let receiver: Receiver | undefined;

  const start = async (env: Record<string, string>, workers: boolean) => {
    const config = loadConfig({ ADMIN_TOKEN: TOKEN, LOG_LEVEL: "silent", MAX_PAYLOAD_BYTES: "2048", ...env });
    const p = await startPlatform(config, { db: ctx.db, logger: createLogger({ level: "silent" }), workers });
    const s = createHttpServer({ routes: p.routes, adminToken: TOKEN, maxBodyBytes: 64 * 1024, mapError: mapPlatformError });
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
    return { p, s, url: `http://127.0.0.1:${(s.address() as AddressInfo).port}` };
  };

  beforeAll(async () => {
    ({ p: platform, s: server, url: base } = await start({ ALLOWED_DESTINATIONS: "127.0.0.1" }, false));
    transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 });
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await platform.stop();
    await transport.close();
  });
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
    await resetOutbound(ctx.db);
  });

  const call = async (method: string, path: string, body?: unknown, options: { raw?: string; token?: string | null } = {}) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (options.token !== null) headers.authorization = `Bearer ${options.token ?? TOKEN}`;
    const res = await fetch(base + path, { method, headers, body: options.raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  it("creates, reads, lists subscriptions; the secret is generated and shown once", async () => {
    const created = await call("POST", "/subscriptions", { url: "https://example.com/hooks", eventTypes: ["order.*"], maxAttempts: 5 });
    expect(created.status).toBe(201);
    expect(created.body.secrets[0]).toMatch(/^whsec_/);
    expect(created.body).toMatchObject({ url: "https://example.com/hooks", eventTypes: ["order.*"], maxAttempts: 5, status: "active" });
    const one = await call("GET", `/subscriptions/${created.body.id}`);
    expect(one.status).toBe(200);
    expect(one.body.secrets).toBeUndefined();
    expect(one.body.health).toEqual({ consecutiveFailures: 0, disabledReason: null, disabledAt: null, nextProbeAt: null, lastFailureAt: null, destinationRefused: null });
    const list = await call("GET", "/subscriptions?status=active");
    expect(list.body.subscriptions.map((s: { id: string }) => s.id)).toEqual([created.body.id]);
  });

  it("rotates secrets: a new one first, the newest old one kept; then only the new one", async () => {
    const created = (await call("POST", "/subscriptions", { url: "https://example.com/hooks", eventTypes: ["*"] })).body;
    const [old] = created.secrets;
    const rotated = await call("POST", `/subscriptions/${created.id}/secrets`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secrets).toHaveLength(2);
    expect(rotated.body.secrets[1]).toBe(old);
    expect(rotated.body.secrets[0]).toMatch(/^whsec_/);
    expect(rotated.body.secrets[0]).not.toBe(old);
    const finished = await call("POST", `/subscriptions/${created.id}/secrets`, { secrets: [rotated.body.secrets[0]] });
    expect(finished.body.secrets).toEqual([rotated.body.secrets[0]]);
    const bad = await call("POST", `/subscriptions/${created.id}/secrets`, { secrets: ["whsec_tooshort"] });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: "invalid_request", details: [{ path: "secrets[0]" }] } } });
    expect((await call("POST", "/subscriptions/nope/secrets")).status).toBe(404);
  });

  it("answers bad input with a precise 4xx, never a 5xx", async () => {
    const cases: [string, string, unknown, number, string, RegExp][] = [
      ["POST", "/subscriptions", { url: "ftp://x.example/h", eventTypes: ["a.b"] }, 400, "invalid_request", /url: must use https/],
      ["POST", "/subscriptions", { url: "https://user:pw@x.example/h", eventTypes: ["a.b"] }, 400, "invalid_request", /must not carry credentials/],
      ["POST", "/subscriptions", { url: "https://x.example/h", eventTypes: [] }, 400, "invalid_request", /eventTypes: list at least one/],
      ["POST", "/subscriptions", { url: "https://x.example/h", eventTypes: ["order.*.paid"] }, 400, "invalid_request", /eventTypes\[0\]: must be an event type/],
      ["POST", "/subscriptions", { url: "https://x.example/h", eventTypes: ["a"], secrets: ["nope"] }, 400, "invalid_request", /secrets\[0\]: must be whsec_/],
      ["POST", "/subscriptions", { url: "https://x.example/h", eventTypes: ["a"], maxAttempts: 0 }, 400, "invalid_request", /maxAttempts/],
      ["POST", "/subscriptions", { url: "https://x.example/h", eventTypes: ["a"], colour: "red" }, 400, "invalid_request", /colour/],
      ["POST", "/subscriptions", { url: "http://169.254.169.254/latest/meta-data", eventTypes: ["a"] }, 400, "invalid_request", /url: Destination 169\.254\.169\.254 refused/],
      ["POST", "/subscriptions", { url: "http://[::1]:8080/h", eventTypes: ["a"] }, 400, "invalid_request", /url: Destination ::1 refused/],
      ["POST", "/subscriptions", { url: "http://printer.local/h", eventTypes: ["a"] }, 400, "invalid_request", /local or internal host name/],
      ["POST", "/subscriptions", [1, 2], 400, "invalid_request", /subscription/],
      ["POST", "/events", { type: "order paid", data: {} }, 400, "invalid_request", /type: must be dot-separated/],
      ["POST", "/events", { type: "a.b" }, 400, "invalid_request", /data: required/],
      ["POST", "/events", "just a string", 400, "invalid_request", /must be a JSON object/],
      ["POST", "/events", { type: "a.b", data: "x".repeat(3000) }, 413, "payload_too_large", /over the limit of 2048 bytes/],
      ["POST", "/events", { type: "a.b", data: {}, occurredAt: "yesterday" }, 400, "invalid_request", /occurredAt/],
      ["POST", "/events/batch", [{ type: "a.b", data: {} }], 400, "invalid_request", /\{ "events": \[/],
      ["POST", "/events/batch", { events: [], extra: 1 }, 400, "invalid_request", /at most 1000 events/],
      ["POST", "/events/batch", { events: [{ type: "a.b", data: {} }, { type: "a b", data: {} }] }, 400, "invalid_request", /^events\[1\]: Invalid event: type/],
      ["POST", "/events/batch", { events: [{ type: "a.b", data: "x".repeat(3000) }] }, 413, "payload_too_large", /^events\[0\]: .*over the limit of 2048 bytes/],
      ["GET", "/deliveries?status=lost", undefined, 400, "invalid_request", /status/],
      ["GET", "/deliveries?limit=abc", undefined, 400, "invalid_request", /limit/],
      ["GET", "/deliveries?limit=0", undefined, 400, "invalid_request", /limit/],
      ["GET", "/deliveries?colour=red", undefined, 400, "invalid_request", /colour/],
      ["GET", "/deliveries/nope", undefined, 404, "not_found", /No delivery with id "nope"/],
      ["GET", "/deliveries/nope/attempts", undefined, 404, "not_found", /No delivery/],
      ["GET", "/subscriptions/nope", undefined, 404, "not_found", /No subscription/],
      ["POST", "/subscriptions/nope/enable", undefined, 404, "not_found", /No subscription/],
      ["GET", "/dead-letters/nope", undefined, 404, "not_found", /No dead letter/],
      ["POST", "/dead-letters/nope/replay", undefined, 404, "not_found", /No delivery/],
      ["POST", "/dead-letters/replay", {}, 400, "invalid_request", /send \{ "ids"/],
      ["POST", "/dead-letters/replay", { ids: [] }, 400, "invalid_request", /ids/],
      ["POST", "/events", { type: "a.b", data: { s: "nul\u0000" } }, 400, "invalid_request", /data\.s \(the NUL character/],
      ["POST", "/subscriptions", { url: "https://x.example/h", eventTypes: ["a"], description: "nul\u0000" }, 400, "invalid_request", /cannot be stored/],
      ["GET", "/deliveries/nul%00", undefined, 400, "invalid_parameter", /Path parameter id .*NUL/],
    ];
    for (const [method, path, body, status, code, message] of cases) {
      const res = await call(method, path, body);
      expect({ path, body, status: res.status, code: res.body?.error?.code }).toEqual({ path, body, status, code });
      expect(res.body.error.message, `${method} ${path}`).toMatch(message);
    }
    const broken = await call("POST", "/events", undefined, { raw: "{not json" });
    expect(broken).toMatchObject({ status: 400, body: { error: { code: "invalid_json" } } });
    const noToken = await call("GET", "/deliveries", undefined, { token: null });
    expect(noToken.status).toBe(401);
    const issues = await call("POST", "/subscriptions", { url: "nope", eventTypes: [] });
    expect(issues.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: "url" }), expect.objectContaining({ path: "eventTypes" })]));
  });

  it("never answers 5xx to arbitrary JSON sent to the write routes", async () => {
    const shaped = fc.record(
      {
        id: fc.oneof(fc.string(), fc.integer()),
        type: fc.oneof(fc.constantFrom("order.paid", "order.*", "*", ""), fc.string()),
        data: fc.jsonValue(),
        url: fc.oneof(fc.webUrl(), fc.string()),
        eventTypes: fc.oneof(fc.array(fc.string()), fc.jsonValue()),
        secrets: fc.oneof(fc.array(fc.string()), fc.jsonValue()),
        maxAttempts: fc.jsonValue(),
        occurredAt: fc.oneof(fc.string(), fc.date().map((d) => (Number.isNaN(d.getTime()) ? "x" : d.toISOString()))),
        ids: fc.array(fc.string()),
        filter: fc.jsonValue(),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("/events", "/events/batch", "/subscriptions", "/dead-letters/replay"), fc.oneof(shaped, fc.jsonValue()), async (path, body) => {
        const res = await call("POST", path, body);
        expect(res.status, `${path} ${JSON.stringify(body)}`).toBeLessThan(500);
        if (res.status >= 400) expect(typeof res.body.error.message).toBe("string");
      }),
      { numRuns: ctx.backend === "pglite" ? 60 : 150 },
    );
  }, 120_000);

  it("enqueues over HTTP idempotently, lists deliveries and attempts, replays dead letters one and many", async () => {
    receiver = await startReceiver(() => ({ status: 400, body: "schema mismatch" }));
    const sub = (await call("POST", "/subscriptions", { url: receiver.url, eventTypes: ["order.*"] })).body;
    const first = await call("POST", "/events", { id: "http-1", type: "order.paid", data: { n: 1 } });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ eventId: "http-1", created: true, deliveries: [{ id: `http-1:${sub.id}`, subscriptionId: sub.id, status: "pending" }] });
    const again = await call("POST", "/events", { id: "http-1", type: "order.paid", data: { n: 1 } });
    expect(again.status).toBe(200);
    expect(again.body.created).toBe(false);
    const clash = await call("POST", "/events", { id: "http-1", type: "order.paid", data: { n: 2 } });
    expect(clash).toMatchObject({ status: 409, body: { error: { code: "event_conflict" } } });
    const batch = await call("POST", "/events/batch", { events: [{ id: "http-1", type: "order.paid", data: { n: 1 } }, { id: "http-2", type: "order.shipped", data: {} }] });
    expect(batch.status).toBe(201);
    expect(batch.body.results.map((r: { eventId: string; created: boolean }) => [r.eventId, r.created])).toEqual([["http-1", false], ["http-2", true]]);
    expect((await call("POST", "/events/batch", { events: [{ id: "http-2", type: "order.shipped", data: {} }] })).status).toBe(200);

    const pending = await call("GET", "/deliveries?status=pending");
    expect(pending.body.deliveries.map((d: { id: string }) => d.id)).toEqual([`http-1:${sub.id}`, `http-2:${sub.id}`]);

    const relay = createRelay({ db: ctx.db, transport });
    await relay.runOnce();
    const id1 = encodeURIComponent(`http-1:${sub.id}`);
    const attempts = await call("GET", `/deliveries/${id1}/attempts`);
    expect(attempts.body.attempts).toMatchObject([{ attemptNumber: 1, result: "permanent", status: 400, responseExcerpt: "schema mismatch" }]);
    const dead = await call("GET", "/dead-letters?reason=permanent");
    expect(dead.body.deadLetters.map((d: { id: string }) => d.id)).toEqual([`http-1:${sub.id}`, `http-2:${sub.id}`]);
    const inspect = await call("GET", `/dead-letters/${id1}`);
    expect(inspect.body).toMatchObject({ deadReason: "permanent failure: HTTP 400", attemptLog: [{ status: 400 }], replayHistory: [] });
    expect(JSON.parse(inspect.body.body)).toMatchObject({ id: "http-1", data: { n: 1 } });

    receiver.respond = () => ({ status: 200 });
    const one = await call("POST", `/dead-letters/${id1}/replay`);
    expect(one.body).toMatchObject({ status: "pending", replays: 1 });
    const twice = await call("POST", `/dead-letters/${id1}/replay`);
    expect(twice).toMatchObject({ status: 409, body: { error: { code: "not_a_dead_letter" } } });
    const many = await call("POST", "/dead-letters/replay", { filter: { subscriptionId: sub.id } });
    expect(many.body).toEqual({ replayed: [`http-2:${sub.id}`], skipped: [] });
    await relay.runOnce();
    const delivered = await call("GET", "/deliveries?status=delivered");
    expect(delivered.body.deliveries).toHaveLength(2);
    expect((await call("GET", `/deliveries/${id1}`)).body).toMatchObject({ status: "delivered", replays: 1, eventType: "order.paid" });
  });

  it("re-enables a subscription disabled by 410 Gone", async () => {
    receiver = await startReceiver(() => ({ status: 410 }));
    const sub = (await call("POST", "/subscriptions", { url: receiver.url, eventTypes: ["*"] })).body;
    await call("POST", "/events", { id: "g", type: "a.b", data: {} });
    await createRelay({ db: ctx.db, transport }).runOnce();
    expect((await call("GET", `/subscriptions/${sub.id}`)).body).toMatchObject({ status: "disabled", health: { disabledReason: expect.stringMatching(/^gone/) } });
    expect((await call("GET", "/subscriptions?status=disabled")).body.subscriptions).toHaveLength(1);
    const enabled = await call("POST", `/subscriptions/${sub.id}/enable`);
    expect(enabled).toMatchObject({ status: 200, body: { status: "active" } });
  });

  it("the platform's own relay worker delivers what POST /events enqueued", async () => {
    receiver = await startReceiver();
    const running = await start({ ALLOWED_DESTINATIONS: "127.0.0.1", OUTBOUND_POLL_INTERVAL_MS: "50" }, true);
    try {
      const res = await fetch(`${running.url}/subscriptions`, {
        method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ url: receiver.url, eventTypes: ["*"] }),
      });
      const created = (await res.json()) as { id: string };
      await fetch(`${running.url}/events`, {
        method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ id: "platform-1", type: "a.b", data: {} }),
      });
      await waitFor("the worker delivered", () => receiver!.received.length === 1);
      expect(receiver.received[0]!.webhookId).toBe(`platform-1:${created.id}`);
    } finally {
      await new Promise((r) => running.s.close(r));
      await running.p.stop();
    }
  });
});
