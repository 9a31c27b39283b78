/**
 * The attempt log reads the same whether an attempt has a row of its own or lives in its
 * delivery's row (migration 039: a first attempt that succeeded is kept there, which saves the
 * relay's hottest statement a row and an index entry per delivery). What `outbound_attempts` and
 * the API answer is checked, and where each attempt was stored. Both backends.
 */
import { afterEach, expect, it } from "vitest";
import { createSubscription, enqueue } from "../../shared/outbound/index.js";
import { listAttempts } from "../../shared/outbound/deliveries.js";
import type { Completion } from "../../shared/outbound/types.js";
import { describeEachBackend } from "../support/databases.js";
import { claim, complete, completion, expireLeases, resetOrdering } from "./support/orderingDriver.js";

describeEachBackend("the attempt log", (ctx) => {
  afterEach(() => resetOrdering(ctx.db));

  const rowsOf = async (deliveryId: string) =>
    (await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbound_attempt_rows WHERE delivery_id = $1", [deliveryId])).rows[0]!.n;

  /** A success with what an HTTP attempt records: status, latency, an excerpt, the request headers. */
  const success = (c: Completion): Completion => ({
    ...c,
    outcome: { ...c.outcome, status: 202, latencyMs: 37, responseExcerpt: "accepted", requestHeaders: { "webhook-id": c.delivery.id, "x-tenant": "[redacted]" } },
  });

  it("keeps a first attempt that succeeded in its delivery's row, and answers it as any other attempt", async () => {
    await createSubscription(ctx.db, { url: "https://example.com/hook", eventTypes: ["a.*"] });
    await enqueue(ctx.db, { id: "e1", type: "a.b", data: 1 });
    const [delivery] = await claim(ctx.db);
    await complete(ctx.db, [success(completion(delivery!, "ok"))]);

    expect(await rowsOf(delivery!.id)).toBe(0);
    const attempts = await listAttempts(ctx.db, delivery!.id);
    expect(attempts).toEqual([expect.objectContaining({
      id: 0, attemptNumber: 1, result: "delivered", status: 202, latencyMs: 37, errorClass: null, responseExcerpt: "accepted",
      requestHeaders: { "webhook-id": delivery!.id, "x-tenant": "[redacted]" }, probe: false, stale: false, listenerId: null,
    })]);
    const [row] = (await ctx.db.query<{ led_to: string; created_at: Date; delivered_at: Date }>(
      "SELECT a.led_to, a.created_at, d.delivered_at FROM outbound_attempts a JOIN outbound_deliveries d ON d.id = a.delivery_id WHERE a.delivery_id = $1", [delivery!.id])).rows;
    expect(row!.led_to).toBe("delivered");
    expect(new Date(row!.created_at).getTime()).toBe(new Date(row!.delivered_at).getTime());
  });

  it("gives every attempt of a delivery that needed more than one a row of its own, in order", async () => {
    await createSubscription(ctx.db, { url: "https://example.com/hook", eventTypes: ["a.*"] });
    await enqueue(ctx.db, { id: "e1", type: "a.b", data: 1 });
    const [first] = await claim(ctx.db);
    await complete(ctx.db, [completion(first!, "retry")]);
    const [second] = await claim(ctx.db);
    await complete(ctx.db, [success(completion(second!, "ok"))]);

    expect(await rowsOf(first!.id)).toBe(2);
    const attempts = await listAttempts(ctx.db, first!.id);
    expect(attempts.map((a) => [a.attemptNumber, a.result, a.status])).toEqual([[1, "retryable", 503], [2, "delivered", 202]]);
    expect(attempts[0]!.id).toBeGreaterThan(0);
    expect(attempts[1]!.id).toBeGreaterThan(attempts[0]!.id);
  });

  it("logs in rows a success after a lost lease, the stale attempt beside it: the delivery's first claim was not this one", async () => {
    await createSubscription(ctx.db, { url: "https://example.com/hook", eventTypes: ["a.*"] });
    await enqueue(ctx.db, { id: "e1", type: "a.b", data: 1 });
    const [stalled] = await claim(ctx.db);
    await expireLeases(ctx.db, [stalled!]);
    const [taken] = await claim(ctx.db);
    await complete(ctx.db, [success(completion(taken!, "ok"))]);
    const late = await complete(ctx.db, [success(completion(stalled!, "ok"))]);

    expect(late.stale).toEqual([stalled!.id]);
    expect(await rowsOf(taken!.id)).toBe(2);
    const attempts = await listAttempts(ctx.db, taken!.id);
    expect(attempts.map((a) => [a.result, a.stale])).toEqual([["delivered", false], ["delivered", true]]);
  });

  it("pages through inline and row attempts alike: the inline one first, then after it", async () => {
    await createSubscription(ctx.db, { url: "https://example.com/hook", eventTypes: ["a.*"] });
    await enqueue(ctx.db, { id: "e1", type: "a.b", data: 1 });
    const [delivery] = await claim(ctx.db);
    await complete(ctx.db, [success(completion(delivery!, "ok"))]);
    // A later attempt of the same delivery (as a replay's would be) gets a row, after the inline one.
    await ctx.db.query("INSERT INTO outbound_attempt_rows (delivery_id, attempt_number, result, status, latency_ms) VALUES ($1, 1, 'delivered', 200, 5)", [delivery!.id]);

    const firstPage = await listAttempts(ctx.db, delivery!.id, { limit: 1 });
    expect(firstPage.map((a) => a.id)).toEqual([0]);
    const next = await listAttempts(ctx.db, delivery!.id, { after: firstPage[0]!.id, limit: 10 });
    expect(next).toHaveLength(1);
    expect(next[0]!.status).toBe(200);
  });
});
