import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import {
  createRelay, createSubscription, enqueue, getDeadLetter, getDelivery, getSubscription, listAttempts,
  replayDeadLetter, replayDeadLetters, type Relay,
} from "../../shared/outbound/index.js";
import { backoffCeilingSeconds, type RetryPolicy } from "../../shared/outbound/retryPolicy.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, startReceiver, waitFor, type Receiver } from "./support/receiver.js";

/** Short enough that a whole schedule runs in a second. */
const FAST: RetryPolicy = { baseSeconds: 0.05, capSeconds: 0.4, maxAttempts: 4, retryAfterCapSeconds: 2 };

describeEachBackend("outbound relay", (ctx) => {
  let transport: Transport;
  let receiver: Receiver;
  let relay: Relay | undefined;

  beforeAll(() => { transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 }); });
  afterAll(() => transport?.close());
  afterEach(async () => {
    await relay?.stop();
    relay = undefined;
    await receiver?.close();
    await resetOutbound(ctx.db);
  });

  const makeRelay = (options: Partial<Parameters<typeof createRelay>[0]> = {}) =>
    (relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST, pollIntervalMs: 20, ...options }));

  /** runOnce until it attempts something (the retry comes due), at most `timeoutMs`. */
  const attemptNext = (r: Relay) => waitFor("a due delivery", () => r.runOnce(), 10_000, 10);

  it("delivers a signed request that the standardwebhooks library verifies, with the stable webhook-id", async () => {
    receiver = await startReceiver();
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["order.*"] });
    await ctx.db.transaction((tx) => enqueue(tx, { id: "ord-1", type: "order.paid", data: { total: 12.5 } }));
    const r = makeRelay();
    await r.start();
    await waitFor("the receiver got it", () => receiver.received.length === 1);
    const got = receiver.received[0]!;
    expect(got.webhookId).toBe(`ord-1:${sub.id}`);
    const verified = new Webhook(sub.secrets![0]!).verify(got.body, got.headers as Record<string, string>);
    expect(verified).toMatchObject({ id: "ord-1", type: "order.paid", data: { total: 12.5 } });
    await waitFor("delivered status", async () => (await getDelivery(ctx.db, got.webhookId)).status === "delivered");
    const attempts = await listAttempts(ctx.db, got.webhookId);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ attemptNumber: 1, result: "delivered", status: 200, errorClass: null, stale: false });
  });

  it("wakes on NOTIFY when an enqueue commits, long before its backstop poll", async () => {
    receiver = await startReceiver();
    await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    const r = makeRelay({ pollIntervalMs: 10 * 60_000 });
    await r.start();
    await new Promise((ok) => setTimeout(ok, 200)); // the loop found nothing and went to sleep
    await ctx.db.transaction((tx) => enqueue(tx, { id: "wake", type: "a.b", data: {} }));
    // Without the notification the next look would be ten minutes away.
    await waitFor("delivery after NOTIFY", () => receiver.received.length === 1, 60_000);
  }, 90_000);

  it("a new endpoint that hangs gets one attempt until it answers, not a round of its turns; after a timeout, still one at a time", async () => {
    // 100 such endpoints opened 800 connections in the relay's first 300 ms, and 400-500 more at
    // each wave of timeouts, between the healthy endpoints' attempts (issue 28, bench:isolation).
    const short = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 600 });
    let release!: () => void;
    const never = new Promise<void>((r) => { release = r; });
    const hanging = await startReceiver(() => ({ status: 200, delay: never }));
    receiver = hanging;
    await createSubscription(ctx.db, { url: hanging.url, eventTypes: ["*"] });
    for (let i = 0; i < 20; i++) await enqueue(ctx.db, { id: `hang-${i}`, type: "a.b", data: {} });
    try {
      await makeRelay({ transport: short }).start();
      await new Promise((r) => setTimeout(r, 400)); // within the first attempt's 600 ms
      expect(hanging.received).toHaveLength(1);
      // At the timeout the limit falls to 1 (halving it, 8 → 4, let four go at once).
      await waitFor("the attempt after the first timeout", () => hanging.received.length >= 2, 20_000);
      await new Promise((r) => setTimeout(r, 300)); // within that attempt's 600 ms
      expect(hanging.received).toHaveLength(2);
    } finally {
      await relay?.stop();
      relay = undefined;
      release();
      await short.close();
    }
  }, 60_000);

  it("signs with every secret during rotation", async () => {
    receiver = await startReceiver();
    const oldSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"], secrets: [oldSecret, "whsec_" + Buffer.alloc(32, 7).toString("base64")] });
    await enqueue(ctx.db, { id: "rot", type: "x.y", data: {} });
    await makeRelay().runOnce();
    const got = receiver.received[0]!;
    expect(String(got.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    for (const secret of sub.secrets!) expect(() => new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).not.toThrow();
  });

  it("retries on the policy's schedule, then dead-letters with the reason; a replay is recorded and delivered", async () => {
    receiver = await startReceiver(() => ({ status: 503, body: "down for maintenance" }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"], maxAttempts: 3 });
    await enqueue(ctx.db, { id: "flaky", type: "a.b", data: {} });
    const id = `flaky:${sub.id}`;
    const r = makeRelay();
    for (let n = 1; n <= 3; n++) {
      await attemptNext(r);
      const { rows } = await ctx.db.query<{ status: string; attempts: number; delay: number }>(
        "SELECT status, attempts, extract(epoch FROM next_attempt_at - updated_at)::float8 AS delay FROM outbound_deliveries WHERE id = $1", [id]);
      expect(rows[0]!.attempts).toBe(n);
      if (n < 3) {
        // Capped exponential backoff with jitter: within [ceiling/2, ceiling] of this attempt's ceiling.
        const ceiling = backoffCeilingSeconds(FAST, n);
        expect(rows[0]!.status).toBe("pending");
        expect(rows[0]!.delay).toBeGreaterThanOrEqual(ceiling / 2 - 0.001);
        expect(rows[0]!.delay).toBeLessThanOrEqual(ceiling + 0.001);
      } else {
        expect(rows[0]!.status).toBe("dead");
      }
    }
    const dead = await getDeadLetter(ctx.db, id);
    expect(dead.deadReason).toBe("exhausted: 3 attempts, last HTTP 503");
    expect(dead.attemptLog.map((a) => [a.attemptNumber, a.result, a.status, a.responseExcerpt])).toEqual([
      [1, "retryable", 503, "down for maintenance"],
      [2, "retryable", 503, "down for maintenance"],
      [3, "retryable", 503, "down for maintenance"],
    ]);
    expect(await r.runOnce()).toBe(0); // dead letters are not retried automatically
    expect(receiver.received).toHaveLength(3);

    receiver.respond = () => ({ status: 204 });
    const replayed = await replayDeadLetter(ctx.db, id, { requestedBy: "test" });
    expect(replayed).toMatchObject({ status: "pending", attempts: 0, replays: 1, deadReason: null });
    await attemptNext(r);
    expect((await getDelivery(ctx.db, id)).status).toBe("delivered");
    expect(receiver.received.map((x) => x.webhookId)).toEqual([id, id, id, id]);
    const history = await ctx.db.query("SELECT previous_reason, requested_by FROM outbound_replays WHERE delivery_id = $1", [id]);
    expect(history.rows).toEqual([{ previous_reason: "exhausted: 3 attempts, last HTTP 503", requested_by: "test" }]);
    expect((await listAttempts(ctx.db, id)).map((a) => a.attemptNumber)).toEqual([1, 2, 3, 1]);
  });

  it("honours Retry-After, bounded by the policy", async () => {
    receiver = await startReceiver(() => ({ status: 429, headers: { "retry-after": "1" } }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await enqueue(ctx.db, { id: "ra", type: "a.b", data: {} });
    const r = makeRelay();
    const delayOf = async () => (await ctx.db.query<{ delay: number }>(
      "SELECT extract(epoch FROM next_attempt_at - updated_at)::float8 AS delay FROM outbound_deliveries WHERE id = $1", [`ra:${sub.id}`])).rows[0]!.delay;
    await r.runOnce();
    expect(await delayOf()).toBeCloseTo(1, 3);
    receiver.respond = () => ({ status: 503, headers: { "retry-after": "86400" } });
    await attemptNext(r);
    expect(await delayOf()).toBeCloseTo(FAST.retryAfterCapSeconds, 3);
    expect((await listAttempts(ctx.db, `ra:${sub.id}`)).map((a) => a.status)).toEqual([429, 503]);
  });

  it("dead-letters a permanent failure at once, with the status and the response excerpt", async () => {
    receiver = await startReceiver(() => ({ status: 400, body: "unknown field 'total'" }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await enqueue(ctx.db, { id: "perm", type: "a.b", data: {} });
    await makeRelay().runOnce();
    const dead = await getDeadLetter(ctx.db, `perm:${sub.id}`);
    expect(dead).toMatchObject({ status: "dead", attempts: 1, deadReason: "permanent failure: HTTP 400", lastStatus: 400 });
    expect(dead.attemptLog[0]).toMatchObject({ result: "permanent", status: 400, responseExcerpt: "unknown field 'total'" });
    expect(JSON.parse(dead.body)).toMatchObject({ id: "perm", type: "a.b" });
  });

  it("caps the response excerpt in the attempt log", async () => {
    receiver = await startReceiver(() => ({ status: 500, body: "x".repeat(100_000) }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await enqueue(ctx.db, { id: "big", type: "a.b", data: {} });
    await makeRelay().runOnce();
    const [attempt] = await listAttempts(ctx.db, `big:${sub.id}`);
    expect(attempt!.responseExcerpt!.length).toBeGreaterThan(0);
    expect(attempt!.responseExcerpt!.length).toBeLessThanOrEqual(1024);
  });

  it("410 Gone disables the subscription and keeps the delivery; re-enabling resumes it", async () => {
    receiver = await startReceiver(() => ({ status: 410 }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await enqueue(ctx.db, { id: "gone-1", type: "a.b", data: {} });
    const r = makeRelay();
    await r.runOnce();
    const disabled = await getSubscription(ctx.db, sub.id);
    expect(disabled.status).toBe("disabled");
    expect(disabled.health.disabledReason).toMatch(/^gone: the endpoint answered 410/);
    expect(disabled.health.nextProbeAt).toBeNull(); // a 410 is not probed: an operator re-enables
    await enqueue(ctx.db, { id: "gone-2", type: "a.b", data: {} });
    expect(await r.runOnce()).toBe(0);
    expect((await getDelivery(ctx.db, `gone-1:${sub.id}`)).status).toBe("pending");
    expect(receiver.received).toHaveLength(1);

    receiver.respond = () => ({ status: 200 });
    const { enableSubscription } = await import("../../shared/outbound/index.js");
    expect((await enableSubscription(ctx.db, sub.id)).status).toBe("active");
    await r.runOnce();
    expect((await getDelivery(ctx.db, `gone-1:${sub.id}`)).status).toBe("delivered");
    expect((await getDelivery(ctx.db, `gone-2:${sub.id}`)).status).toBe("delivered");
  });

  it("refuses a destination outside the SSRF allow-list: a permanent failure, nothing sent", async () => {
    receiver = await startReceiver();
    const strict = createTransport({ allowedDestinations: [] });
    try {
      const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
      await enqueue(ctx.db, { id: "ssrf", type: "a.b", data: {} });
      await createRelay({ db: ctx.db, transport: strict, retryPolicy: FAST }).runOnce();
      const d = await getDelivery(ctx.db, `ssrf:${sub.id}`);
      expect(d.status).toBe("dead");
      expect(d.deadReason).toMatch(/destination_refused/);
      expect(receiver.received).toHaveLength(0);
    } finally {
      await strict.close();
    }
  });

  it("bulk replay by filter re-enters the normal path and reports what it skipped", async () => {
    receiver = await startReceiver(() => ({ status: 422 }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    for (let i = 0; i < 5; i++) await enqueue(ctx.db, { id: `bulk-${i}`, type: i < 3 ? "a.one" : "a.two", data: {} });
    const r = makeRelay();
    await r.runOnce();
    receiver.respond = () => ({ status: 200 });
    const byType = await replayDeadLetters(ctx.db, { filter: { eventType: "a.one", reasonPrefix: "permanent" } });
    expect(byType.replayed).toEqual([0, 1, 2].map((i) => `bulk-${i}:${sub.id}`));
    const byIds = await replayDeadLetters(ctx.db, { ids: [`bulk-3:${sub.id}`, `bulk-0:${sub.id}`, "nope"] });
    expect(byIds).toEqual({ replayed: [`bulk-3:${sub.id}`], skipped: [`bulk-0:${sub.id}`, "nope"] });
    await r.runOnce();
    const statuses = await ctx.db.query<{ id: string; status: string }>("SELECT id, status FROM outbound_deliveries ORDER BY id");
    expect(statuses.rows.map((x) => x.status)).toEqual(["delivered", "delivered", "delivered", "delivered", "dead"]);
  });
});
