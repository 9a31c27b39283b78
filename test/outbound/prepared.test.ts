/**
 * The relay's hot statements are prepared once per connection (shared/db/prepared.ts): the
 * benchmark's biggest lever, so a change that silently stops it must fail here. On PGlite the
 * same statements simply run unprepared.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { prepared, preparedName } from "../../shared/db/prepared.js";
import { enqueue, enqueueMany } from "../../shared/outbound/enqueue.js";
import { createSubscription } from "../../shared/outbound/subscriptions.js";
import { resetOutbound } from "./support/receiver.js";
import { claimDueDeliveries, leaseWrite } from "../../shared/outbound/sql/claimDeliveries.js";
import { describeEachBackend } from "../support/databases.js";

describe("prepared statement registry", () => {
  it("gives each SQL text one name, and each name one text", () => {
    const text = `SELECT 1 AS registry_test_${randomUUID().slice(0, 8)}`;
    expect(prepared("registry_test_a", text)).toBe(text);
    expect(preparedName(text)).toBe("registry_test_a");
    expect(prepared("registry_test_a", text)).toBe(text); // the same pair again: fine
    expect(() => prepared("registry_test_b", text)).toThrow(/already prepared as "registry_test_a"/);
    expect(() => prepared("registry_test_a", `${text} -- another`)).toThrow(/"registry_test_a" is already used/);
    expect(preparedName("SELECT 2")).toBeUndefined();
  });
});

describeEachBackend("hot statements", (ctx) => {
  it("the claim runs as two named, prepared statements on our own PostgreSQL connections, on their generic plans", async () => {
    const sub = await createSubscription(ctx.db, { url: "http://127.0.0.1:9/plan", eventTypes: ["claimplan.*"] });
    await ctx.db.transaction((tx) => enqueueMany(tx, Array.from({ length: 12 }, (_, i) => ({ id: `claimplan-${i}`, type: "claimplan.test", data: i }))));
    // In leaseWrite, as the relay claims (it sets the plan cache mode with the commit mode).
    const plans = await leaseWrite(ctx.db, async (tx) => {
      for (let i = 0; i < 10; i++) {
        expect(await claimDueDeliveries(tx, { limit: 1, leaseSeconds: 60, leaseToken: randomUUID(), shares: new Map([[sub.id, 1]]) })).toHaveLength(1);
      }
      // pg_prepared_statements lists this connection's statements: the claims just ran on it.
      return (await tx.query<{ name: string; generic: string; custom: string }>(
        "SELECT name, generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements WHERE name LIKE 'outbound_claim_%' ORDER BY name",
      )).rows;
    });
    await resetOutbound(ctx.db);
    if (ctx.backend === "pglite") return expect(plans).toEqual([]);
    expect(plans.map((p) => p.name)).toEqual(["outbound_claim_due", "outbound_claim_lock"]);
    // The first five runs are planned for their values; a claim keeping its own plans after that
    // would pay the planning (as long as running it) on every claim.
    for (const p of plans) expect(Number(p.generic), p.name).toBeGreaterThanOrEqual(5);
  });

  // PostgreSQL keeps re-planning a prepared statement while a plan for the actual values looks
  // cheaper than the generic plan; for the enqueue CTE, planning cost as much as running it.
  it("one event's enqueue settles on the generic plan instead of re-planning every time", async () => {
    const plans = await ctx.db.transaction(async (tx) => {
      for (let i = 0; i < 10; i++) await enqueue(tx, { id: `plan-${i}`, type: "plan.test", data: i });
      return (await tx.query<{ generic: string; custom: string }>(
        "SELECT generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements WHERE name = 'outbound_enqueue_one'",
      )).rows;
    });
    await ctx.db.query("DELETE FROM outbound_events WHERE id LIKE 'plan-%'");
    if (ctx.backend === "pglite") return expect(plans).toEqual([]);
    // The first five runs are always planned for their values; after that the generic plan is kept.
    expect(plans).toHaveLength(1);
    expect(plans[0]!.custom).toBe("5");
    expect(Number(plans[0]!.generic)).toBeGreaterThanOrEqual(5);
  });

  // Events without an ordering key never need the keys' upsert or places: they run the plain
  // fan-out (bench/enqueue.ts measured the ordered shape at +50 % of the database CPU per event
  // in batches, the plain one at the cost of the code before ordered delivery).
  it("enqueues without ordering keys run the plain statement; keyed ones the ordered shape, on its generic plan", async () => {
    await createSubscription(ctx.db, { url: "http://127.0.0.1:9/plain", eventTypes: ["shape.*"], ordered: true });
    const used = await ctx.db.transaction(async (tx) => {
      for (let i = 0; i < 8; i++) {
        await enqueue(tx, { id: `shape-one-${i}`, type: "shape.test", data: i });
        await enqueueMany(tx, [{ id: `shape-many-${i}-a`, type: "shape.test", data: i }, { id: `shape-many-${i}-b`, type: "shape.test", data: i }]);
      }
      for (let i = 0; i < 8; i++) {
        // Two events of one key in one batch, the second first by id: places follow the caller's order.
        await enqueueMany(tx, [{ id: `shape-keyed-${i}-z`, type: "shape.test", data: i, orderingKey: "k" }, { id: `shape-keyed-${i}-a`, type: "shape.test", data: i, orderingKey: "k" }]);
      }
      const places = (await tx.query<{ id: string; seq: string }>("SELECT id, ordering_seq AS seq FROM outbound_deliveries WHERE event_id LIKE 'shape-keyed-0-%' ORDER BY ordering_seq")).rows;
      const statements = (await tx.query<{ name: string; generic: string }>(
        "SELECT name, generic_plans AS generic FROM pg_prepared_statements WHERE name LIKE 'outbound_enqueue_%' ORDER BY name",
      )).rows;
      return { places, statements };
    });
    await resetOutbound(ctx.db);
    expect(used.places.map((p) => [p.id.split(":")[0], Number(p.seq)])).toEqual([["shape-keyed-0-z", 1], ["shape-keyed-0-a", 2]]);
    if (ctx.backend === "pglite") return expect(used.statements).toEqual([]);
    expect(used.statements.map((s) => s.name)).toEqual(["outbound_enqueue_many", "outbound_enqueue_many_keyed", "outbound_enqueue_one"]);
    for (const s of used.statements) expect(Number(s.generic), s.name).toBeGreaterThanOrEqual(3);
  });
});
