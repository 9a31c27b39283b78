/**
 * The relay's hot statements are prepared once per connection (shared/db/prepared.ts): the
 * benchmark's biggest lever, so a change that silently stops it must fail here. On PGlite the
 * same statements simply run unprepared.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { prepared, preparedName } from "../../shared/db/prepared.js";
import { enqueue } from "../../shared/outbound/enqueue.js";
import { claimDueDeliveries } from "../../shared/outbound/sql/claimDeliveries.js";
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
  it("the claim runs as a named, prepared statement on our own PostgreSQL connections", async () => {
    const names = await ctx.db.transaction(async (tx) => {
      await claimDueDeliveries(tx, { limit: 10, leaseSeconds: 60, leaseToken: randomUUID() });
      // pg_prepared_statements lists this connection's statements: the claim just ran on it.
      return (await tx.query<{ name: string }>("SELECT name FROM pg_prepared_statements ORDER BY name")).rows.map((r) => r.name);
    });
    if (ctx.backend === "postgres") expect(names).toContain("outbound_claim_due");
    else expect(names).not.toContain("outbound_claim_due");
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
});
