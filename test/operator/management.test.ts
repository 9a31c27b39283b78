/**
 * The management API's operations on subscriptions, events and dead letters, on both backends,
 * with the platform's own relay running: what happens to pending and in-flight deliveries when a
 * subscription is edited, paused, resumed or deleted; custom headers; test events; resends;
 * backfills; dead-letter replay by filter; one pagination scheme; 405 with Allow; 415.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachBackend } from "../support/databases.js";
import { eventually, makeDeadLetter, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

/** A receiver that holds every request until the test answers it: an attempt kept in flight. */
async function startHoldingReceiver() {
  const waiting: { path: string; headers: IncomingHttpHeaders; res: ServerResponse }[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => waiting.push({ path: req.url ?? "/", headers: req.headers, res }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    waiting,
    answer(status: number) {
      const held = waiting.shift();
      held?.res.writeHead(status).end();
      return held;
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

describeEachBackend("management API", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await startTestReceiver();
    t = await startTestPlatform(ctx.db);
  }, 180_000);
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(t.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${t.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  const delivery = (id: string) => t.api("GET", `/deliveries/${encodeURIComponent(id)}`);
  const received = (type: string) => receiver.received.filter((r) => JSON.parse(r.body).type === type);

  it("edits a subscription: URL, event types, description, max attempts, headers; pending deliveries take them, validation is precise", async () => {
    receiver.answer = ({ path }) => (path === "/old" ? 500 : 200);
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/old`, eventTypes: ["edit.a"], description: "before" });
    const { deliveries: [d] } = await t.api("POST", "/events", { id: "edit-1", type: "edit.a", data: { n: 1 } });
    await eventually("a failed attempt at /old", async () => (await delivery(d.id)).attempts >= 1);
    const edited = await t.api("PATCH", `/subscriptions/${sub.id}`, {
      url: `${receiver.url}/new`, eventTypes: ["edit.a", "edit.b"], description: null, maxAttempts: 3, headers: { "X-Api-Key": "k-123" },
    });
    expect(edited).toMatchObject({ url: `${receiver.url}/new`, eventTypes: ["edit.a", "edit.b"], description: null, maxAttempts: 3, headers: { "x-api-key": "k-123" }, status: "active" });
    // The pending delivery is due at once at the new URL, with the new header.
    await eventually("delivered at /new", async () => (await delivery(d.id)).status === "delivered");
    const atNew = receiver.received.filter((r) => r.path === "/new" && r.headers["webhook-id"] === d.id);
    expect(atNew).toHaveLength(1);
    expect(atNew[0]!.headers["x-api-key"]).toBe("k-123");
    // New event types apply to new events.
    const b = await t.api("POST", "/events", { id: "edit-2", type: "edit.b", data: {} });
    expect(b.deliveries.map((x: { subscriptionId: string }) => x.subscriptionId)).toEqual([sub.id]);

    const bad = async (change: unknown) => (await call("PATCH", `/subscriptions/${sub.id}`, change)).body.error;
    expect(await bad({ headers: { "webhook-signature": "x" } })).toMatchObject({ code: "invalid_request", details: [{ path: "headers.webhook-signature" }] });
    for (const name of ["Host", "content-length", "Connection", "transfer-encoding", "user-agent"]) {
      expect((await bad({ headers: { [name]: "x" } })).message).toContain(name);
    }
    expect((await bad({ headers: { "x-a": "one\r\nx-b: two" } })).message).toContain("one line");
    expect((await bad({ headers: { "x a": "1" } })).message).toContain("not a valid header name");
    expect(await bad({ secrets: ["whsec_x"] })).toMatchObject({ code: "invalid_request" });
    expect((await bad({})).message).toContain("at least one field");
    expect((await bad({ url: "ftp://x" })).details[0].path).toBe("url");
    // Issue 15's flow settings are editable too (and back to their defaults with null); `ordered` is set at creation only.
    expect(await t.api("PATCH", `/subscriptions/${sub.id}`, { attemptTimeoutMs: 2500, maxInFlight: 8, rateLimitPerSecond: 20 }))
      .toMatchObject({ attemptTimeoutMs: 2500, maxInFlight: 8, rateLimitPerSecond: 20 });
    expect(await t.api("PATCH", `/subscriptions/${sub.id}`, { attemptTimeoutMs: null, rateLimitPerSecond: null }))
      .toMatchObject({ attemptTimeoutMs: null, rateLimitPerSecond: null, maxInFlight: 8 });
    expect((await bad({ attemptTimeoutMs: 10 })).details[0].path).toBe("attemptTimeoutMs");
    expect(await bad({ ordered: true })).toMatchObject({ code: "invalid_request" });
    expect((await call("PATCH", "/subscriptions/sub_nope", { description: "x" })).status).toBe(404);
    receiver.answer = 200;
  });

  it("an attempt in flight during an edit finishes with the old URL and headers, and is applied; the next one uses the new", async () => {
    const held = await startHoldingReceiver();
    try {
      const sub = await t.api("POST", "/subscriptions", { url: `${held.url}/before`, eventTypes: ["edit.flight"], headers: { "x-v": "1" } });
      const first = (await t.api("POST", "/events", { id: "flight-1", type: "edit.flight", data: {} })).deliveries[0].id;
      await eventually("the attempt in flight", async () => held.waiting.length === 1);
      await t.api("PATCH", `/subscriptions/${sub.id}`, { url: `${held.url}/after`, headers: { "x-v": "2" } });
      const old = held.answer(200)!;
      expect(old).toMatchObject({ path: "/before", headers: expect.objectContaining({ "x-v": "1", "webhook-id": first }) });
      await eventually("the in-flight one delivered", async () => (await delivery(first)).status === "delivered");
      const second = (await t.api("POST", "/events", { id: "flight-2", type: "edit.flight", data: {} })).deliveries[0].id;
      await eventually("the next attempt", async () => held.waiting.length === 1);
      expect(held.answer(200)).toMatchObject({ path: "/after", headers: expect.objectContaining({ "x-v": "2", "webhook-id": second }) });
      await eventually("delivered", async () => (await delivery(second)).status === "delivered");
    } finally {
      await held.close();
    }
  });

  it("pause keeps pending deliveries (an attempt in flight finishes and is applied); resume delivers them", async () => {
    const held = await startHoldingReceiver();
    try {
      const sub = await t.api("POST", "/subscriptions", { url: held.url, eventTypes: ["pause.a"] });
      const first = (await t.api("POST", "/events", { id: "pause-1", type: "pause.a", data: {} })).deliveries[0].id;
      await eventually("the first attempt in flight", async () => held.waiting.length === 1);
      const paused = await t.api("POST", `/subscriptions/${sub.id}/pause`);
      expect(paused).toMatchObject({ paused: true, status: "active" });
      expect(paused.pausedAt).toBeTruthy();
      const second = (await t.api("POST", "/events", { id: "pause-2", type: "pause.a", data: {} })).deliveries[0].id;
      // The attempt in flight finishes, and its outcome is applied.
      held.answer(200);
      await eventually("the in-flight one delivered", async () => (await delivery(first)).status === "delivered");
      // The other waits, unattempted, however long the relay polls.
      await new Promise((r) => setTimeout(r, 800));
      expect(held.waiting).toHaveLength(0);
      expect(await delivery(second)).toMatchObject({ status: "pending", attempts: 0 });
      expect((await t.api("GET", "/subscriptions?paused=true")).subscriptions.map((s: { id: string }) => s.id)).toContain(sub.id);
      const resumed = await t.api("POST", `/subscriptions/${sub.id}/resume`);
      expect(resumed).toMatchObject({ paused: false, pausedAt: null });
      await eventually("the waiting one sent after resume", async () => held.waiting.length === 1);
      held.answer(200);
      await eventually("delivered", async () => (await delivery(second)).status === "delivered");
    } finally {
      await held.close();
    }
  });

  it("delete cancels pending deliveries (kept as history); one in flight finishes and is not retried; no new deliveries", async () => {
    const held = await startHoldingReceiver();
    try {
      const sub = await t.api("POST", "/subscriptions", { url: held.url, eventTypes: ["del.a"] });
      const inFlight = (await t.api("POST", "/events", { id: "del-1", type: "del.a", data: {} })).deliveries[0].id;
      await eventually("the attempt in flight", async () => held.waiting.length === 1);
      await t.api("POST", `/subscriptions/${sub.id}/pause`);
      const waiting = (await t.api("POST", "/events", { id: "del-2", type: "del.a", data: {} })).deliveries[0].id;
      const deleted = await t.api("DELETE", `/subscriptions/${sub.id}`);
      expect(deleted).toMatchObject({ id: sub.id, cancelledDeliveries: 2 });
      // The attempt in flight finishes (here: a 500, which would be retried) and is not retried.
      held.answer(500);
      await eventually("its attempt logged", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(inFlight)}/attempts`)).attempts.length === 1);
      const log = (await t.api("GET", `/deliveries/${encodeURIComponent(inFlight)}/attempts`)).attempts;
      expect(log[0]).toMatchObject({ status: 500, stale: true });
      for (const id of [inFlight, waiting]) {
        const d = await delivery(id);
        expect(d).toMatchObject({ status: "cancelled" });
        expect(d.cancelledAt).toBeTruthy();
      }
      await new Promise((r) => setTimeout(r, 800));
      expect(held.waiting).toHaveLength(0);
      // Gone from the subscription operations, kept in the deliveries.
      expect((await call("GET", `/subscriptions/${sub.id}`)).status).toBe(404);
      expect((await call("DELETE", `/subscriptions/${sub.id}`)).status).toBe(404);
      expect((await call("POST", `/subscriptions/${sub.id}/test`)).status).toBe(404);
      expect((await t.api("GET", "/subscriptions")).subscriptions.map((s: { id: string }) => s.id)).not.toContain(sub.id);
      expect((await t.api("GET", `/deliveries?subscriptionId=${sub.id}&status=cancelled`)).deliveries).toHaveLength(2);
      expect((await t.api("POST", "/events", { id: "del-3", type: "del.a", data: {} })).deliveries).toEqual([]);
    } finally {
      await held.close();
    }
  });

  it("sends a test event to one subscription only, whatever its event types, through the normal path", async () => {
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/test`, eventTypes: ["never.sent"], headers: { "x-tenant": "t1" } });
    const other = await t.api("POST", "/subscriptions", { url: `${receiver.url}/other`, eventTypes: ["*"] });
    const sent = await t.api("POST", `/subscriptions/${sub.id}/test`);
    expect(sent.eventId).toMatch(/^test_/);
    expect(sent.deliveries).toEqual([{ id: `${sent.eventId}:${sub.id}`, subscriptionId: sub.id, status: "pending" }]);
    await eventually("the test event received", async () => receiver.received.some((r) => r.headers["webhook-id"] === sent.deliveries[0].id));
    const got = receiver.received.find((r) => r.headers["webhook-id"] === sent.deliveries[0].id)!;
    expect(JSON.parse(got.body)).toMatchObject({ type: "webhooks.test", data: { subscriptionId: sub.id } });
    expect(got.headers["x-tenant"]).toBe("t1");
    expect((await delivery(sent.deliveries[0].id)).origin).toBe("test");
    const custom = await t.api("POST", `/subscriptions/${sub.id}/test`, { type: "order.paid", data: { example: true } });
    expect((await t.api("GET", `/events/${custom.eventId}`)).data).toEqual({ example: true });
    expect((await call("POST", `/subscriptions/${sub.id}/test`, { type: "Bad Type" })).status).toBe(400);
    expect(receiver.received.filter((r) => r.path === "/other" && r.headers["webhook-id"]?.toString().startsWith("test_"))).toEqual([]);
    await t.api("DELETE", `/subscriptions/${other.id}`);
  });

  it("lists events by type and time, newest first, page by page; one event with all its deliveries", async () => {
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/ev`, eventTypes: ["list.*"] });
    const before = new Date(Date.now() - 1000).toISOString();
    for (let i = 1; i <= 5; i++) await t.api("POST", "/events", { id: `list-${i}`, type: i % 2 ? "list.odd" : "list.even", data: { i } });
    const all: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = `/events?since=${encodeURIComponent(before)}&limit=2${cursor ? `&cursor=${cursor}` : ""}`;
      const r: { events: { id: string }[]; next: string | null } = await t.api("GET", q);
      all.push(...r.events.map((e) => e.id));
      cursor = r.next;
      pages++;
    } while (cursor);
    expect(all.filter((id) => id.startsWith("list-"))).toEqual(["list-5", "list-4", "list-3", "list-2", "list-1"]);
    expect(pages).toBeGreaterThanOrEqual(3);
    const odd = await t.api("GET", "/events?type=list.odd");
    expect(odd.events.map((e: { id: string }) => e.id)).toEqual(["list-5", "list-3", "list-1"]);
    expect(odd.next).toBeNull();
    expect(odd.events[0]).toMatchObject({ type: "list.odd", occurredAt: expect.any(String), createdAt: expect.any(String) });
    expect((await t.api("GET", `/events?type=list.odd&until=${encodeURIComponent(before)}`)).events).toEqual([]);
    const one = await t.api("GET", "/events/list-3");
    expect(one).toMatchObject({ id: "list-3", type: "list.odd", data: { i: 3 } });
    expect(one.deliveries.map((d: { id: string }) => d.id)).toEqual([`list-3:${sub.id}`]);
    expect(JSON.parse(one.body)).toMatchObject({ id: "list-3", data: { i: 3 } });
    expect((await call("GET", "/events/nope")).body.error).toMatchObject({ code: "not_found", details: { entity: "event" } });
    expect((await call("GET", "/events?since=yesterday")).status).toBe(400);
    expect((await call("GET", "/events?cursor=bm90LW91cnM")).body.error.code).toBe("invalid_cursor");
  });

  it("resends an event, delivered or not, to one or all of its subscriptions: new deliveries, recorded", async () => {
    const a = await t.api("POST", "/subscriptions", { url: `${receiver.url}/ra`, eventTypes: ["resend.a"] });
    const b = await t.api("POST", "/subscriptions", { url: `${receiver.url}/rb`, eventTypes: ["resend.a"] });
    const stranger = await t.api("POST", "/subscriptions", { url: `${receiver.url}/rc`, eventTypes: ["other.type"] });
    await t.api("POST", "/events", { id: "resend-1", type: "resend.a", data: { v: 1 } });
    await eventually("both delivered", async () => (await t.api("GET", "/events/resend-1")).deliveries.every((d: { status: string }) => d.status === "delivered"));
    const toOne = await t.api("POST", "/events/resend-1/resend", { subscriptionId: a.id });
    expect(toOne.deliveries).toHaveLength(1);
    expect(toOne.deliveries[0].id).toMatch(new RegExp(`^resend-1:${a.id}:resend_`));
    const toAll = await t.api("POST", "/events/resend-1/resend");
    expect(toAll.deliveries.map((d: { subscriptionId: string }) => d.subscriptionId).sort()).toEqual([a.id, b.id].sort());
    await eventually("the resends delivered", async () => (await t.api("GET", "/events/resend-1")).deliveries.filter((d: { status: string }) => d.status === "delivered").length === 5);
    const detail = await t.api("GET", "/events/resend-1");
    expect(detail.deliveries.filter((d: { origin: string }) => d.origin === "resend")).toHaveLength(3);
    // Who asked: the bootstrap token here (a key's id when a key asks).
    expect(detail.deliveries.find((d: { origin: string }) => d.origin === "resend").requestedBy).toBe("bootstrap");
    // The same body, a new webhook-id each time.
    const bodies = receiver.received.filter((r) => JSON.parse(r.body).id === "resend-1");
    expect(new Set(bodies.map((r) => r.body)).size).toBe(1);
    expect(new Set(bodies.map((r) => r.headers["webhook-id"])).size).toBe(5);
    expect((await call("POST", "/events/resend-1/resend", { subscriptionId: stranger.id })).body.error.code).toBe("not_subscribed");
    expect((await call("POST", "/events/nope/resend")).status).toBe(404);
    expect((await call("POST", "/events/resend-1/resend", { subscription: a.id })).status).toBe(400);
  });

  it("a new subscription may ask for the past events of a time range (backfill)", async () => {
    await t.api("POST", "/events", { id: "bf-old", type: "bf.x", data: {} });
    const since = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await t.api("POST", "/events", { id: "bf-1", type: "bf.x", data: {} });
    await t.api("POST", "/events", { id: "bf-2", type: "bf.y", data: {} });
    await t.api("POST", "/events", { id: "bf-3", type: "other.z", data: {} });
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/bf`, eventTypes: ["bf.*"], backfill: { since } });
    expect(sub.backfilled).toBe(2);
    await eventually("both backfilled delivered", async () => receiver.received.filter((r) => r.path === "/bf").length === 2);
    expect(receiver.received.filter((r) => r.path === "/bf").map((r) => JSON.parse(r.body).id).sort()).toEqual(["bf-1", "bf-2"]);
    expect((await delivery(`bf-1:${sub.id}`)).origin).toBe("backfill");
    const bad = await call("POST", "/subscriptions", { url: `${receiver.url}/bf`, eventTypes: ["bf.*"], backfill: { since, until: "2000-01-01T00:00:00Z" } });
    expect(bad.body.error).toMatchObject({ code: "invalid_request", details: [{ path: "backfill.until" }] });
  });

  it("replays dead letters by subscription, event type and time range", async () => {
    receiver.answer = ({ path }) => (path.startsWith("/dead") ? 400 : 200);
    const one = await makeDeadLetter(t, `${receiver.url}/dead-1`, "dlq-one");
    const two = await makeDeadLetter(t, `${receiver.url}/dead-2`, "dlq-two");
    const middle = new Date().toISOString();
    const three = await makeDeadLetter(t, `${receiver.url}/dead-3`, "dlq-three");
    receiver.answer = 200;
    const listed = await t.api("GET", `/dead-letters?until=${encodeURIComponent(middle)}&eventType=test.dlq_two`);
    expect(listed.deadLetters.map((d: { id: string }) => d.id)).toEqual([two.deliveryId]);
    const r1 = await t.api("POST", "/dead-letters/replay", { filter: { since: middle } });
    expect(r1.replayed).toEqual([three.deliveryId]);
    const r2 = await t.api("POST", "/dead-letters/replay", { filter: { subscriptionId: one.subscriptionId, until: middle } });
    expect(r2.replayed).toEqual([one.deliveryId]);
    await eventually("the replays delivered", async () => (await delivery(one.deliveryId)).status === "delivered" && (await delivery(three.deliveryId)).status === "delivered");
    expect((await delivery(two.deliveryId)).status).toBe("dead");
    expect((await call("POST", "/dead-letters/replay", { filter: { since: "soon" } })).status).toBe(400);
  });

  it("a delivery that dies after its single allowed attempt reads '1 attempt', and the chart counts it as failed", async () => {
    receiver.answer = ({ path }) => (path === "/once" ? 500 : 200);
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/once`, eventTypes: ["once.a"], maxAttempts: 1 });
    const { deliveries: [d] } = await t.api("POST", "/events", { id: "once-1", type: "once.a", data: {} });
    await eventually("dead", async () => (await delivery(d.id)).status === "dead");
    expect((await delivery(d.id)).deadReason).toBe("exhausted: 1 attempt, last HTTP 500");
    const stats = await t.api("GET", "/stats/deliveries-per-minute?minutes=2");
    const sum = (k: string) => stats.series.reduce((n: number, b: Record<string, number>) => n + b[k]!, 0);
    // Its one attempt, a retryable 500 that nothing retries, counts as failed (the exact split is test/operator/stats.test.ts).
    expect(sum("failed")).toBeGreaterThanOrEqual(1);
    expect(sum("deadLettered")).toBeGreaterThanOrEqual(1);
    receiver.answer = 200;
    await t.api("DELETE", `/subscriptions/${sub.id}`);
  });

  it("pages every list the same way: limit and next", async () => {
    for (let i = 0; i < 3; i++) await t.api("POST", "/subscriptions", { url: `${receiver.url}/page`, eventTypes: ["page.x"] });
    for (const [path, key] of [["/subscriptions", "subscriptions"], ["/deliveries", "deliveries"], ["/events", "events"], ["/dead-letters", "deadLetters"], ["/inbox", "entries"]] as const) {
      const first = await t.api("GET", `${path}?limit=1`);
      expect(Object.keys(first).sort()).toEqual([key, "next"].sort());
      if (first[key].length === 0) continue;
      const seen = new Set<string>([JSON.stringify(first[key][0])]);
      let next = first.next;
      for (let n = 0; next && n < 3; n++) {
        const more = await t.api("GET", `${path}?limit=1&cursor=${encodeURIComponent(next)}`);
        expect(more[key]).toHaveLength(1);
        expect(seen.has(JSON.stringify(more[key][0]))).toBe(false);
        seen.add(JSON.stringify(more[key][0]));
        next = more.next;
      }
    }
    const all = await t.api("GET", "/subscriptions?limit=1000");
    expect(all.next).toBeNull();
    const attempts = await t.api("GET", `/deliveries/${encodeURIComponent((await t.api("GET", "/deliveries?status=delivered&limit=1")).deliveries[0].id)}/attempts?limit=1`);
    expect(attempts).toMatchObject({ attempts: [expect.any(Object)], next: null });
    expect((await call("GET", "/subscriptions?after=x")).status).toBe(400);
    expect((await call("GET", "/deliveries?cursor=%%%")).body.error.code).toBe("invalid_cursor");
  });

  it("answers 405 with Allow, and 415 to a body that is not JSON", async () => {
    const r = await call("PUT", "/subscriptions");
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe("GET, HEAD, POST");
    expect(r.body.error.code).toBe("method_not_allowed");
    expect((await call("POST", "/subscriptions/x")).headers.get("allow")).toBe("DELETE, GET, HEAD, PATCH");
    const form = await call("POST", "/events", "type=a.b", { "content-type": "application/x-www-form-urlencoded" });
    expect(form.status).toBe(415);
    expect(form.body.error.code).toBe("unsupported_media_type");
    const none = await fetch(`${t.baseUrl}/events`, { method: "POST", headers: { authorization: `Bearer ${t.token}` }, body: new Uint8Array(Buffer.from('{"type":"a.b","data":1}')) });
    expect(none.status).toBe(415);
    const ok = await call("POST", "/events", { type: "media.ok", data: 1 }, { "content-type": "application/json; charset=utf-8" });
    expect(ok.status).toBe(201);
    expect((await call("PATCH", "/subscriptions/x", "{}", { "content-type": "text/plain" })).status).toBe(415);
  });
});
