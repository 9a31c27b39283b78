import { expect, it } from "vitest";
import { migrate } from "../shared/db/migrate.js";
import { describeEachBackend } from "./support/databases.js";

describeEachBackend("database port", (ctx) => {
  it("runs parameterised queries and reports row counts", async () => {
    const r = await ctx.db.query<{ n: number }>("SELECT $1::int + 1 AS n", [41]);
    expect(r.rows[0]?.n).toBe(42);
  });

  it("commits a transaction that resolves and rolls back one that throws", async () => {
    await ctx.db.query("CREATE TABLE t_tx (v int)");
    await ctx.db.transaction(async (tx) => { await tx.query("INSERT INTO t_tx VALUES (1)"); });
    await expect(
      ctx.db.transaction(async (tx) => {
        await tx.query("INSERT INTO t_tx VALUES (2)");
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    const r = await ctx.db.query<{ v: number }>("SELECT v FROM t_tx ORDER BY v");
    expect(r.rows.map((x) => x.v)).toEqual([1]);
  });

  it("applies migrations once: a second run applies nothing", async () => {
    expect(await migrate(ctx.db)).toEqual([]);
    const r = await ctx.db.query<{ n: string }>("SELECT count(*)::text AS n FROM schema_migrations");
    expect(Number(r.rows[0]?.n)).toBeGreaterThanOrEqual(0);
  });

  it("delivers NOTIFY to a listener", async () => {
    const got: string[] = [];
    const stop = await ctx.db.listen("t_chan", (p) => got.push(p));
    await ctx.db.query("SELECT pg_notify('t_chan', 'hello')");
    for (let i = 0; i < 50 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    await stop();
    expect(got).toEqual(["hello"]);
  });
});
