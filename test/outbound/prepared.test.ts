/**
 * The relay's hot statements are prepared once per connection (shared/db/prepared.ts): the
 * benchmark's biggest lever, so a change that silently stops it must fail here. On PGlite the
 * same statements simply run unprepared.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { prepared, preparedName } from "../../shared/db/prepared.js";
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
});
