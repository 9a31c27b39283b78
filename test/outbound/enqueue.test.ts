import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import {
  createSubscription, enqueue, enqueueMany, EventConflictError, MAX_EVENTS_PER_BATCH, listDeliveries, matchesEventType, NOTIFY_CHANNEL,
  OutboundValidationError, PayloadTooLargeError,
} from "../../shared/outbound/index.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, waitFor } from "./support/receiver.js";

describeEachBackend("outbound enqueue", (ctx) => {
  afterEach(() => resetOutbound(ctx.db));

  const sub = (eventTypes: string[]) => createSubscription(ctx.db, { url: "https://example.com/hooks", eventTypes });

  it("fans out one delivery per matching subscription: exact, prefix wildcard and *", async () => {
    const exact = await sub(["order.paid"]);
    const prefix = await sub(["order.*"]);
    const all = await sub(["*"]);
    const other = await sub(["invoice.*", "order.paid.partially"]);
    const disabled = await sub(["order.paid"]);
    await ctx.db.query("UPDATE outbound_subscriptions SET status = 'disabled' WHERE id = $1", [disabled.id]);

    const result = await ctx.db.transaction((tx) => enqueue(tx, { id: "e1", type: "order.paid", data: { n: 1 } }));
    expect(result.created).toBe(true);
    const ids = result.deliveries.map((d) => d.subscriptionId).sort();
    // The disabled one is included: its deliveries are kept until it recovers.
    expect(ids).toEqual([exact.id, prefix.id, all.id, disabled.id].sort());
    expect(ids).not.toContain(other.id);
    for (const d of result.deliveries) expect(d.id).toBe(`e1:${d.subscriptionId}`);

    const deep = await ctx.db.transaction((tx) => enqueue(tx, { id: "e2", type: "order.paid.partially", data: null }));
    expect(deep.deliveries.map((d) => d.subscriptionId).sort()).toEqual([prefix.id, all.id, other.id].sort());
    const none = await ctx.db.transaction((tx) => enqueue(tx, { id: "e3", type: "orders.paid", data: 1 }));
    expect(none.deliveries.map((d) => d.subscriptionId)).toEqual([all.id]);
  });

  it("matches patterns in SQL exactly as matchesEventType does", async () => {
    const patterns = ["*", "a.*", "a.b", "a.b.*", "ab.*", "a"];
    const types = ["a", "a.b", "a.b.c", "ab", "ab.c", "a_b", "b.a"];
    const subs = new Map<string, string>();
    for (const p of patterns) subs.set((await sub([p])).id, p);
    for (const [i, type] of types.entries()) {
      const r = await enqueue(ctx.db, { id: `m${i}`, type, data: {} });
      const got = r.deliveries.map((d) => subs.get(d.subscriptionId)).sort();
      expect(got, type).toEqual(patterns.filter((p) => matchesEventType(p, type)).sort());
    }
  });

  it("leaves nothing behind when the caller's transaction rolls back", async () => {
    await sub(["order.*"]);
    await expect(
      ctx.db.transaction(async (tx) => {
        await enqueue(tx, { id: "rolled", type: "order.paid", data: {} });
        throw new Error("business rule failed");
      }),
    ).rejects.toThrow("business rule failed");
    const events = await ctx.db.query("SELECT 1 FROM outbound_events WHERE id = 'rolled'");
    expect(events.rows).toHaveLength(0);
    expect(await listDeliveries(ctx.db, { eventId: "rolled" })).toEqual([]);
  });

  /**
   * How many wake-ups relays receive while `act` runs: at least one is awaited, then a round trip
   * gives a late one (from a rolled-back transaction, or a second from one batch) the chance to
   * show up too.
   */
  const notificationsDuring = async (act: () => Promise<unknown>): Promise<number> => {
    const got: string[] = [];
    const stop = await ctx.db.listen(NOTIFY_CHANNEL, (p) => got.push(p));
    try {
      await act();
      await waitFor("a notification", () => got.length > 0, 5000);
      await ctx.db.query("SELECT pg_notify('outbound_test_barrier', '')");
      return got.length;
    } finally {
      await stop();
    }
  };

  it("notifies relays on commit only", async () => {
    await sub(["order.*"]);
    expect(await notificationsDuring(async () => {
      await ctx.db.transaction(async (tx) => {
        await enqueue(tx, { id: "n-rolled", type: "order.paid", data: {} });
        throw new Error("rollback");
      }).catch(() => {});
      await ctx.db.transaction((tx) => enqueue(tx, { id: "n-commit", type: "order.paid", data: {} }));
    })).toBe(1);
  });

  it("is idempotent by event id: the same event again returns the existing rows and changes nothing", async () => {
    const first = await sub(["order.*"]);
    const a = await enqueue(ctx.db, { id: "same", type: "order.paid", data: { a: 1, b: [1, 2] } });
    await ctx.db.query("UPDATE outbound_deliveries SET status = 'delivered' WHERE event_id = 'same'");
    await sub(["order.*"]); // created later: must not receive the earlier event on a repeat
    const before = await ctx.db.query("SELECT * FROM outbound_events WHERE id = 'same'");
    // Same data with keys in another order is the same JSON value.
    const b = await ctx.db.transaction((tx) => enqueue(tx, { id: "same", type: "order.paid", data: { b: [1, 2], a: 1 } }));
    expect(b.created).toBe(false);
    expect(b.deliveries).toEqual([{ id: `same:${first.id}`, subscriptionId: first.id, status: "delivered" }]);
    expect(a.deliveries.map((d) => d.id)).toEqual(b.deliveries.map((d) => d.id));
    expect((await ctx.db.query("SELECT * FROM outbound_events WHERE id = 'same'")).rows).toEqual(before.rows);
  });

  it("refuses the same id with a different payload or type", async () => {
    await sub(["order.*"]);
    await enqueue(ctx.db, { id: "clash", type: "order.paid", data: { amount: 1 } });
    await expect(enqueue(ctx.db, { id: "clash", type: "order.paid", data: { amount: 2 } })).rejects.toBeInstanceOf(EventConflictError);
    await expect(enqueue(ctx.db, { id: "clash", type: "order.refunded", data: { amount: 1 } })).rejects.toThrow(/already enqueued with a different type or payload/);
  });

  it("validates type, id, JSON and size with typed errors that say where", async () => {
    const bad = async (event: unknown, options = {}) => {
      try {
        await enqueue(ctx.db, event as never, options);
      } catch (error) {
        return error as OutboundValidationError;
      }
      throw new Error("expected a validation error");
    };
    const noType = await bad({ data: {} });
    expect(noType).toBeInstanceOf(OutboundValidationError);
    expect(noType.issues[0]?.path).toBe("type");

    expect((await bad({ type: "order..paid", data: {} })).message).toMatch(/type: must be dot-separated segments/);
    expect((await bad({ type: "order.paid", id: "a:b", data: {} })).issues[0]?.path).toBe("id");
    expect((await bad({ type: "order.paid" })).issues[0]?.path).toBe("data");
    expect((await bad({ type: "order.paid", data: { x: [1, Number.NaN] } })).message).toMatch(/data\.x\[1\] \(NaN is not a JSON number\)/);
    expect((await bad({ type: "order.paid", data: { when: new Date() } })).message).toMatch(/data\.when \(a Date object is not JSON/);
    expect((await bad({ type: "order.paid", data: { f: () => 1 } })).message).toMatch(/data\.f \(a function is not JSON\)/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect((await bad({ type: "order.paid", data: cyclic })).message).toMatch(/circular reference/);
    expect((await bad({ type: "order.paid", data: {}, extra: 1 })).message).toMatch(/extra|Unrecognized key/i);

    const tooBig = await bad({ type: "order.paid", data: "x".repeat(2000) }, { maxPayloadBytes: 1024 });
    expect(tooBig).toBeInstanceOf(PayloadTooLargeError);
    expect(tooBig.message).toMatch(/over the limit of 1024 bytes/);
    expect((await ctx.db.query("SELECT 1 FROM outbound_events")).rows).toHaveLength(0);
  });

  it("generates an event id when none is given, and fixes the body at enqueue", async () => {
    const s = await sub(["order.*"]);
    const r = await enqueue(ctx.db, { type: "order.paid", data: { x: "é" }, occurredAt: "2026-01-02T03:04:05Z" });
    expect(r.eventId).toMatch(/^evt_/);
    const { rows } = await ctx.db.query<{ body: string }>("SELECT body FROM outbound_events WHERE id = $1", [r.eventId]);
    expect(JSON.parse(rows[0]!.body)).toEqual({ id: r.eventId, type: "order.paid", timestamp: "2026-01-02T03:04:05.000Z", data: { x: "é" } });
    expect(r.deliveries).toEqual([{ id: `${r.eventId}:${s.id}`, subscriptionId: s.id, status: "pending" }]);
  });

  it("enqueueMany writes a batch in one statement: results in input order, each event fanned out, one NOTIFY", async () => {
    const orders = await sub(["order.*"]);
    const all = await sub(["*"]);
    let results: Awaited<ReturnType<typeof enqueueMany>> = [];
    expect(await notificationsDuring(async () => {
      results = await ctx.db.transaction((tx) => enqueueMany(tx, [
        { id: "b3", type: "order.paid", data: { n: 3 } },
        { id: "b1", type: "invoice.sent", data: { n: 1 } },
        { id: "b2", type: "order.shipped", data: null },
      ]));
    })).toBe(1);
    expect(results.map((r) => [r.eventId, r.created])).toEqual([["b3", true], ["b1", true], ["b2", true]]);
    expect(results[0]!.deliveries.map((d) => d.subscriptionId).sort()).toEqual([orders.id, all.id].sort());
    expect(results[1]!.deliveries).toEqual([{ id: `b1:${all.id}`, subscriptionId: all.id, status: "pending" }]);
    for (const r of results) for (const d of r.deliveries) expect(d.id).toBe(`${r.eventId}:${d.subscriptionId}`);
    const stored = await ctx.db.query<{ event_id: string }>("SELECT event_id FROM outbound_deliveries ORDER BY event_id");
    expect(stored.rows.map((r) => r.event_id)).toEqual(["b1", "b2", "b2", "b3", "b3"]);
  });

  it("enqueueMany: repeats within and across batches are reported, not rewritten; a changed repeat is a conflict", async () => {
    const s = await sub(["order.*"]);
    await enqueue(ctx.db, { id: "old", type: "order.paid", data: { a: 1, b: 2 } });
    const results = await enqueueMany(ctx.db, [
      { id: "new", type: "order.paid", data: { x: 1 } },
      { id: "old", type: "order.paid", data: { b: 2, a: 1 } }, // the same JSON value, keys reordered
      { id: "new", type: "order.paid", data: { x: 1 } },
    ]);
    expect(results.map((r) => [r.eventId, r.created])).toEqual([["new", true], ["old", false], ["new", false]]);
    expect(results[1]!.deliveries).toEqual([{ id: `old:${s.id}`, subscriptionId: s.id, status: "pending" }]);
    expect(results[2]!.deliveries).toEqual(results[0]!.deliveries);
    expect((await ctx.db.query("SELECT 1 FROM outbound_deliveries")).rows).toHaveLength(2);
    await ctx.db.query("DELETE FROM outbound_deliveries WHERE event_id = 'keys'");

    await expect(enqueueMany(ctx.db, [
      { id: "twice", type: "order.paid", data: 1 },
      { id: "other", type: "order.paid", data: 1 },
      { id: "twice", type: "order.paid", data: 2 },
    ])).rejects.toThrow(/^events\[0\] and events\[2\] share the id twice with a different type or payload/);
    // Within a batch as across calls, data is compared as a JSON value: key order does not matter.
    const reordered = await enqueueMany(ctx.db, [
      { id: "keys", type: "order.paid", data: { a: 1, b: [1, { c: 2, d: 3 }] } },
      { id: "keys", type: "order.paid", data: { b: [1, { d: 3, c: 2 }], a: 1 } },
    ]);
    expect(reordered.map((r) => r.created)).toEqual([true, false]);
    expect((await ctx.db.query("SELECT 1 FROM outbound_events WHERE id = 'twice'")).rows).toHaveLength(0);

    // Inside a transaction, a conflict with an earlier event takes the whole batch back with it.
    await expect(ctx.db.transaction((tx) => enqueueMany(tx, [
      { id: "fresh", type: "order.paid", data: 1 },
      { id: "old", type: "order.paid", data: { a: 2 } },
    ]))).rejects.toThrow(/old was already enqueued with a different type or payload/);
    expect((await ctx.db.query("SELECT 1 FROM outbound_events WHERE id = 'fresh'")).rows).toHaveLength(0);
  });

  it("a repeat whose earlier event retention deletes in the middle of the call is written anew, not called a conflict", async () => {
    const s = await sub(["order.*"]);
    await enqueue(ctx.db, { id: "vanishing", type: "order.paid", data: { v: 1 } });
    let raced = false;
    // The retention pass lands right after enqueue's insert skipped the existing event.
    const racing = {
      query: async (text: string, values?: unknown[]) => {
        const result = await ctx.db.query(text, values);
        if (!raced) {
          raced = true;
          await ctx.db.query("DELETE FROM outbound_deliveries WHERE event_id = 'vanishing'");
          await ctx.db.query("DELETE FROM outbound_events WHERE id = 'vanishing'");
        }
        return result;
      },
    };
    const again = await enqueue(racing as never, { id: "vanishing", type: "order.paid", data: { v: 1 } });
    expect(again).toEqual({ eventId: "vanishing", created: true, deliveries: [{ id: `vanishing:${s.id}`, subscriptionId: s.id, status: "pending" }] });
    expect(await listDeliveries(ctx.db, { eventId: "vanishing" })).toHaveLength(1);
  });

  it("enqueueMany validates every event first and names the bad one; nothing is written", async () => {
    await sub(["order.*"]);
    const rejection = <E>(p: Promise<unknown>) => p.then(() => { throw new Error("expected a rejection"); }, (e: unknown) => e as E);
    const error = await rejection<OutboundValidationError>(enqueueMany(ctx.db, [
      { id: "v1", type: "order.paid", data: {} },
      { id: "v2", type: "order..paid", data: {} },
    ]));
    expect(error).toBeInstanceOf(OutboundValidationError);
    expect(error.message).toMatch(/^events\[1\]: Invalid event: type: must be dot-separated/);
    expect(error.issues[0]?.path).toBe("[1].type");
    const big = await rejection<PayloadTooLargeError>(
      enqueueMany(ctx.db, [{ id: "v3", type: "order.paid", data: {} }, { type: "order.paid", data: "x".repeat(2000) }], { maxPayloadBytes: 1024 }),
    );
    expect(big).toBeInstanceOf(PayloadTooLargeError);
    expect(big.message).toMatch(/^events\[1\]: The event body is \d+ bytes, over the limit of 1024 bytes/);
    const tooMany = Array.from({ length: MAX_EVENTS_PER_BATCH + 1 }, (_, i) => ({ id: `m${i}`, type: "order.paid", data: i }));
    await expect(enqueueMany(ctx.db, tooMany)).rejects.toThrow(/1001 events in one batch, over the limit of 1000; split them/);
    await expect(enqueueMany(ctx.db, "nope" as never)).rejects.toThrow(/expected an array of events/);
    const notAnObject = await rejection<OutboundValidationError>(enqueueMany(ctx.db, [{ type: "order.paid", data: 1 }, null as never]));
    expect(notAnObject.issues[0]?.path).toBe("[1]");
    expect((await ctx.db.query("SELECT 1 FROM outbound_events")).rows).toHaveLength(0);
    expect(await enqueueMany(ctx.db, [])).toEqual([]);
  });

  if (ctx.backend === "postgres") {
    it("joins a transaction on a pg.PoolClient the caller owns (commit and rollback)", async () => {
      await sub(["order.*"]);
      const pool = new pg.Pool({ connectionString: ctx.url, max: 2 });
      const client = await pool.connect();
      try {
        await client.query("CREATE TABLE IF NOT EXISTS app_orders (id int PRIMARY KEY, status text)");
        await client.query("BEGIN");
        await client.query("INSERT INTO app_orders VALUES (1, 'paid')");
        await enqueue(client, { id: "pc-rolled", type: "order.paid", data: { id: 1 } });
        await client.query("ROLLBACK");
        await client.query("BEGIN");
        await client.query("INSERT INTO app_orders VALUES (2, 'paid')");
        const r = await enqueue(client, { id: "pc-commit", type: "order.paid", data: { id: 2 } });
        // Not visible to anyone else before the caller commits.
        expect(await listDeliveries(ctx.db, { eventId: "pc-commit" })).toEqual([]);
        await client.query("COMMIT");
        expect((await listDeliveries(ctx.db, { eventId: "pc-commit" })).map((d) => d.id)).toEqual(r.deliveries.map((d) => d.id));
        expect(await listDeliveries(ctx.db, { eventId: "pc-rolled" })).toEqual([]);
        expect((await ctx.db.query("SELECT id FROM app_orders ORDER BY id")).rows).toEqual([{ id: 2 }]);
      } finally {
        client.release();
        await pool.end();
      }
    });
  }
});

describe("event patterns", () => {
  it("matchesEventType: exact, prefix at any depth, star", () => {
    expect(matchesEventType("order.paid", "order.paid")).toBe(true);
    expect(matchesEventType("order.*", "order.paid.partially")).toBe(true);
    expect(matchesEventType("order.*", "order")).toBe(false);
    expect(matchesEventType("order.*", "orders.paid")).toBe(false);
    expect(matchesEventType("*", "anything.at.all")).toBe(true);
  });
});
