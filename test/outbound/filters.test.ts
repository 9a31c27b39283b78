/**
 * Issue 30 item 2: content filters on subscriptions. Validated on creation with precise errors;
 * decided at enqueue in the same statement (a filtered-out event has no delivery row), on both
 * backends; edited and removed; applied to a backfill. The random cases are in
 * filters.property.test.ts; these are the contract's named ones.
 */
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { createSubscription, enqueue, enqueueMany, OutboundValidationError } from "../../shared/outbound/index.js";
import { updateSubscription } from "../../shared/outbound/subscriptionChanges.js";
import { filterToJsonPath } from "../../shared/outbound/filters.js";
import { describeEachBackend } from "../support/databases.js";
import { startTestPlatform, type TestPlatform } from "../operator/harness.js";
import { resetOutbound } from "./support/receiver.js";

const url = "https://example.com/hooks";

describeEachBackend("subscription filters", (ctx) => {
  afterEach(() => resetOutbound(ctx.db));

  const deliveryRows = async (eventId: string) =>
    (await ctx.db.query<{ subscription_id: string }>("SELECT subscription_id FROM outbound_deliveries WHERE event_id = $1 ORDER BY subscription_id", [eventId])).rows.map((r) => r.subscription_id);

  it("creates a delivery only for subscriptions whose filter matches: orders above 100 EUR", async () => {
    const big = await createSubscription(ctx.db, { url, eventTypes: ["order.*"], filter: { "data.amount": { $gt: 100 }, "data.currency": "EUR" } });
    const all = await createSubscription(ctx.db, { url, eventTypes: ["order.*"] });
    expect(big.filter).toEqual({ "data.amount": { $gt: 100 }, "data.currency": "EUR" });
    expect(all.filter).toBeNull();

    const small = await ctx.db.transaction((tx) => enqueue(tx, { id: "small", type: "order.paid", data: { amount: 40, currency: "EUR" } }));
    const dollars = await ctx.db.transaction((tx) => enqueue(tx, { id: "dollars", type: "order.paid", data: { amount: 400, currency: "USD" } }));
    const large = await ctx.db.transaction((tx) => enqueue(tx, { id: "large", type: "order.paid", data: { amount: 100.01, currency: "EUR" } }));
    expect(small.deliveries.map((d) => d.subscriptionId)).toEqual([all.id]);
    expect(dollars.deliveries.map((d) => d.subscriptionId)).toEqual([all.id]);
    expect(large.deliveries.map((d) => d.subscriptionId).sort()).toEqual([all.id, big.id].sort());
    // No row at all for the filtered-out pairs, not a skipped one.
    expect(await deliveryRows("small")).toEqual([all.id]);
    expect(await deliveryRows("large")).toEqual([all.id, big.id].sort());
  });

  it("filters a batch per event, with and without ordering keys", async () => {
    const eur = await createSubscription(ctx.db, { url, eventTypes: ["*"], filter: { "data.currency": "EUR" } });
    const ordered = await createSubscription(ctx.db, { url, eventTypes: ["*"], ordered: true, filter: { $or: [{ type: { $prefix: "invoice." } }, { "data.vip": true }] } });
    const events = [
      { id: "b1", type: "order.paid", data: { currency: "EUR" } },
      { id: "b2", type: "order.paid", data: { currency: "USD", vip: true }, orderingKey: "c1" },
      { id: "b3", type: "invoice.sent", data: { currency: "EUR" }, orderingKey: "c1" },
      { id: "b4", type: "order.paid", data: { vip: "true" } },
    ];
    const results = await ctx.db.transaction((tx) => enqueueMany(tx, events));
    expect(results.map((r) => r.deliveries.map((d) => d.subscriptionId).sort())).toEqual([[eur.id], [ordered.id], [eur.id, ordered.id].sort(), []]);
    // The ordered subscription's places count only the deliveries it got: b2 first, b3 second.
    const { rows } = await ctx.db.query<{ id: string; ordering_seq: string }>("SELECT id, ordering_seq FROM outbound_deliveries WHERE subscription_id = $1 ORDER BY ordering_seq", [ordered.id]);
    expect(rows.map((r) => [r.id, Number(r.ordering_seq)])).toEqual([[`b2:${ordered.id}`, 1], [`b3:${ordered.id}`, 2]]);
  });

  it("compares strings exactly, whatever characters they hold (quotes, backslashes, regex and LIKE characters, emoji)", async () => {
    const tricky = ["a\"b", "back\\slash", ".*+?[](){}|^$", "50%_off", "😀 ü \n\t", "'; DROP TABLE x; --"];
    for (const [i, s] of tricky.entries()) {
      const eq = await createSubscription(ctx.db, { url, eventTypes: ["*"], filter: { "data.s": s } });
      const contains = await createSubscription(ctx.db, { url, eventTypes: ["*"], filter: { "data.s": { $contains: Array.from(s).slice(1, -1).join("") } } });
      const prefix = await createSubscription(ctx.db, { url, eventTypes: ["*"], filter: { "data.s": { $prefix: Array.from(s).slice(0, 2).join("") } } });
      const hit = await enqueue(ctx.db, { id: `t${i}`, type: "x", data: { s } });
      expect(hit.deliveries.map((d) => d.subscriptionId).sort(), s).toEqual([eq.id, contains.id, prefix.id].sort());
      // The same characters in another order match neither the equality nor (mostly) the others.
      const miss = await enqueue(ctx.db, { id: `u${i}`, type: "x", data: { s: [...s].reverse().join("") + "!" } });
      expect(miss.deliveries.map((d) => d.subscriptionId), s).not.toContain(eq.id);
      await resetOutbound(ctx.db);
    }
  });

  it("$contains finds an element of an array or a substring; $exists tells a null field from a missing one", async () => {
    const tagged = await createSubscription(ctx.db, { url, eventTypes: ["*"], filter: { "data.tags": { $contains: "urgent" } } });
    const hasNote = await createSubscription(ctx.db, { url, eventTypes: ["*"], filter: { "data.note": { $exists: true } } });
    const noNote = await createSubscription(ctx.db, { url, eventTypes: ["*"], filter: { "data.note": { $exists: false } } });
    const who = async (id: string, data: unknown) => (await enqueue(ctx.db, { id, type: "x", data })).deliveries.map((d) => d.subscriptionId).sort();
    expect(await who("c1", { tags: ["a", "urgent"], note: null })).toEqual([tagged.id, hasNote.id].sort());
    // On a string, $contains is a substring test.
    expect(await who("c2", { tags: "not urgent!" })).toEqual([tagged.id, noNote.id].sort());
    expect(await who("c4", { tags: "Urgent" })).toEqual([noNote.id]);
    expect(await who("c3", { tags: [["urgent"]] })).toEqual([noNote.id]);
  });

  it("is changed and removed by an edit, for events enqueued after it", async () => {
    const sub = await createSubscription(ctx.db, { url, eventTypes: ["*"], filter: { "data.n": 1 } });
    expect((await enqueue(ctx.db, { id: "e1", type: "x", data: { n: 2 } })).deliveries).toEqual([]);
    const edited = await updateSubscription(ctx.db, sub.id, { filter: { "data.n": { $in: [2, 3] } } });
    expect(edited.filter).toEqual({ "data.n": { $in: [2, 3] } });
    expect((await enqueue(ctx.db, { id: "e2", type: "x", data: { n: 2 } })).deliveries).toHaveLength(1);
    expect((await enqueue(ctx.db, { id: "e3", type: "x", data: { n: 1 } })).deliveries).toEqual([]);
    expect((await updateSubscription(ctx.db, sub.id, { filter: null })).filter).toBeNull();
    expect((await enqueue(ctx.db, { id: "e4", type: "x", data: { n: 1 } })).deliveries).toHaveLength(1);
    await expect(updateSubscription(ctx.db, sub.id, { filter: { "data.n": { $gt: [1] } } })).rejects.toThrow(/filter\.data\.n\.\$gt: must be a number or a string/);
  });

  it("applies to a backfill: only the past events it matches are sent", async () => {
    const since = new Date(Date.now() - 60_000).toISOString();
    await enqueueMany(ctx.db, [1, 50, 150, 300].map((amount) => ({ id: `p${amount}`, type: "order.paid", data: { amount } })));
    const sub = await createSubscription(ctx.db, { url, eventTypes: ["order.paid"], filter: { "data.amount": { $gte: 150 } }, backfill: { since } });
    expect(sub.backfilled).toBe(2);
    const { rows } = await ctx.db.query<{ event_id: string }>("SELECT event_id FROM outbound_deliveries WHERE subscription_id = $1 ORDER BY event_id", [sub.id]);
    expect(rows.map((r) => r.event_id)).toEqual(["p150", "p300"]);
  });

  it("refuses invalid filters with every problem at its place, and stores nothing", async () => {
    const refused = async (filter: unknown) => {
      const error = await createSubscription(ctx.db, { url, eventTypes: ["*"], filter }).then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(OutboundValidationError);
      return (error as OutboundValidationError).issues;
    };
    expect(await refused({ "data.amount": { $gtt: 100 } })).toEqual([{ path: "filter.data.amount.$gtt", message: expect.stringMatching(/^unknown operator; use one of \$eq .* \$contains$/) }]);
    expect(await refused({ amount: 1 })).toEqual([{ path: "filter.amount", message: expect.stringContaining("starting with id, type, timestamp, data") }]);
    expect(await refused({ "data.x": { nested: 1 } })).toEqual([{ path: "filter.data.x.nested", message: expect.stringContaining("use a dot path") }]);
    expect(await refused({ "data.x": [1, 2] })).toEqual([{ path: "filter.data.x", message: expect.stringContaining("must be a string, number, boolean or null") }]);
    expect(await refused({ $or: [] , "data.y": { $in: [] } })).toEqual([
      { path: "filter.$or", message: "must be a non-empty array of filters" },
      { path: "filter.data.y.$in", message: "must be an array of 1 to 100 scalars" },
    ]);
    expect(await refused({ $nor: [{ "data.x": 1 }] })).toEqual([{ path: "filter.$nor", message: expect.stringContaining("unknown logical operator $nor") }]);
    expect(await refused({})).toEqual([{ path: "filter", message: expect.stringContaining("at least one condition") }]);
    expect(await refused({ "data.s": "nul\u0000" })).toEqual([{ path: "filter.data.s", message: expect.stringContaining("NUL") }]);
    expect(await refused("data.amount > 100")).toEqual([{ path: "filter", message: expect.any(String) }]);
    const { rows } = await ctx.db.query("SELECT 1 FROM outbound_subscriptions");
    expect(rows).toEqual([]);
  });
});

it("compiles to a strict jsonpath whose every leaf is two-valued (exists), so $not is the complement", () => {
  expect(filterToJsonPath({ "data.amount": { $gt: 100 }, $not: { type: "order.refunded" } }))
    .toBe('strict exists($ ? (@."data"."amount" > 100)) && !(exists($ ? (@."type" == "order.refunded")))');
});

describeEachBackend("subscription filters over HTTP", (ctx) => {
  let platform: TestPlatform;
  beforeAll(async () => { platform = await startTestPlatform(ctx.db, {}, { workers: false }); });
  afterAll(() => platform.stop());

  it("POST /subscriptions answers 400 with the filter's issues, and PATCH shows the new filter", async () => {
    const res = await fetch(`${platform.baseUrl}/subscriptions`, {
      method: "POST", headers: { authorization: `Bearer ${platform.token}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "http://127.0.0.1:9/hooks", eventTypes: ["order.*"], filter: { "data.amount": { $gt: "a", $lt: {} } } }),
    });
    expect(res.status).toBe(400);
    const body = await res.json() as { error: { code: string; message: string; details: { path: string; message: string }[] } };
    expect(body.error.message).toContain("filter.data.amount.$lt: must be a number or a string");
    expect(body.error.details.map((i) => i.path)).toEqual(["filter.data.amount.$lt"]);
    const sub = await platform.api("POST", "/subscriptions", { url: "http://127.0.0.1:9/hooks", eventTypes: ["order.*"], filter: { "data.amount": { $gte: 100 } } });
    expect(sub.filter).toEqual({ "data.amount": { $gte: 100 } });
    const patched = await platform.api("PATCH", `/subscriptions/${sub.id}`, { filter: { "data.currency": "EUR" } });
    expect((await platform.api("GET", `/subscriptions/${sub.id}`)).filter).toEqual(patched.filter);
    const ev = await platform.api("POST", "/events", { id: "h1", type: "order.paid", data: { currency: "USD" } });
    expect(ev.deliveries).toEqual([]);
  });
});
