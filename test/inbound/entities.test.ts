/**
 * The reconciler's step in the database (entities.ts `reconcile`): what each decision writes (the
 * entity row, its version, the transition log) and what it leaves alone, and the per-entity lock
 * that serialises two creations of one entity. On both backends.
 */
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { entityKey, entityState, getEntity, reconcile } from "../../shared/inbound/entities.js";
import { defineMachine } from "../../shared/inbound/stateMachine.js";
import { describeEachBackend } from "../support/databases.js";

const task = defineMachine({
  name: "task",
  states: ["open", "done", "dropped"],
  events: {
    "task.opened": { from: [null], to: "open" },
    "task.done": { from: ["open"], to: "done" },
    "task.dropped": { from: ["open"], to: "dropped" },
  },
});

const T0 = new Date("2026-12-01T10:00:00.000Z");
const T1 = new Date("2026-12-01T10:00:05.250Z");

describeEachBackend("reconcile (the reconciler's database step)", (ctx) => {
  const step = (entityId: string, eventType: string, at: Date, entryId: string = randomUUID()) =>
    ctx.db.transaction((tx) => reconcile(tx, task, entityId, eventType, entryId, at));

  it("names an entity's key by machine and id", () => {
    expect(entityKey("task", "t-1")).toBe("task:t-1");
  });

  it("an applied creation writes the entity at version 1 and logs the transition from absence", async () => {
    const entry = randomUUID();
    expect(await step("a", "task.opened", T0, entry)).toEqual({ kind: "apply", from: null, to: "open" });
    expect(await getEntity(ctx.db, "task", "a")).toEqual({
      machine: "task", id: "a", state: "open", version: 1, createdAt: T0.toISOString(), updatedAt: T0.toISOString(),
      transitions: [{ eventType: "task.opened", outcome: "applied", from: null, to: "open", at: T0.toISOString(), inboxEntryId: entry }],
    });
    expect(await entityState(ctx.db, "task", "a")).toBe("open");
  });

  it("an applied change moves the state, bumps the version and updated_at, keeps created_at; the log grows oldest first", async () => {
    await step("b", "task.opened", T0);
    const entry = randomUUID();
    expect(await step("b", "task.done", T1, entry)).toEqual({ kind: "apply", from: "open", to: "done" });
    const e = await getEntity(ctx.db, "task", "b");
    expect(e).toMatchObject({ state: "done", version: 2, createdAt: T0.toISOString(), updatedAt: T1.toISOString() });
    expect(e!.transitions.map((t) => [t.eventType, t.outcome, t.from, t.to, t.at, t.inboxEntryId === entry])).toEqual([
      ["task.opened", "applied", null, "open", T0.toISOString(), false],
      ["task.done", "applied", "open", "done", T1.toISOString(), true],
    ]);
  });

  it("a duplicate and a stale event change nothing but are logged, with the state as from and to", async () => {
    await step("c", "task.opened", T0);
    await step("c", "task.done", T0);
    expect((await step("c", "task.done", T1)).kind).toBe("duplicate");
    expect((await step("c", "task.opened", T1)).kind).toBe("stale");
    const e = await getEntity(ctx.db, "task", "c");
    expect(e).toMatchObject({ state: "done", version: 2, updatedAt: T0.toISOString() });
    expect(e!.transitions.slice(2).map((t) => [t.eventType, t.outcome, t.from, t.to, t.at])).toEqual([
      ["task.done", "duplicate", "done", "done", T1.toISOString()],
      ["task.opened", "stale", "done", "done", T1.toISOString()],
    ]);
  });

  it("a deferred or rejected event writes nothing: no entity, no log", async () => {
    expect((await step("d", "task.done", T0)).kind).toBe("defer");
    expect((await step("d", "task.reopened", T0)).kind).toBe("reject");
    expect(await getEntity(ctx.db, "task", "d")).toBeUndefined();
    expect(await entityState(ctx.db, "task", "d")).toBeNull();
    await step("e", "task.opened", T0);
    await step("e", "task.dropped", T0);
    expect((await step("e", "task.done", T1)).kind).toBe("reject");
    expect((await getEntity(ctx.db, "task", "e"))!.transitions).toHaveLength(2);
  });

  it("keeps machines and entities apart", async () => {
    const other = defineMachine({ name: "other", states: ["open"], events: { "task.opened": { from: [null], to: "open" } } });
    await step("f", "task.opened", T0);
    expect((await ctx.db.transaction((tx) => reconcile(tx, other, "f", "task.opened", randomUUID(), T0))).kind).toBe("apply");
    expect((await step("g", "task.opened", T0)).kind).toBe("apply");
    expect(await entityState(ctx.db, "other", "f")).toBe("open");
    expect((await getEntity(ctx.db, "task", "f"))!.transitions).toHaveLength(1);
    expect(await entityState(ctx.db, "other", "g")).toBeNull();
  });

  it("serialises one entity's events, its creation included: the second of two concurrent creations is a duplicate", async () => {
    if (ctx.backend === "pglite") return; // one connection: transactions cannot overlap there
    let releaseFirst!: () => void;
    const held = new Promise<void>((r) => { releaseFirst = r; });
    let firstDecided!: () => void;
    const decided = new Promise<void>((r) => { firstDecided = r; });
    const first = ctx.db.transaction(async (tx) => {
      const d = await reconcile(tx, task, "h", "task.opened", randomUUID(), T0);
      firstDecided();
      await held; // the entity's lock is held until this transaction ends
      return d;
    });
    await decided;
    const second = step("h", "task.opened", T1);
    await new Promise((r) => setTimeout(r, 200)); // the second waits on the lock meanwhile
    releaseFirst();
    expect((await first).kind).toBe("apply");
    expect((await second).kind).toBe("duplicate");
    const e = await getEntity(ctx.db, "task", "h");
    expect(e).toMatchObject({ state: "open", version: 1, createdAt: T0.toISOString() });
    expect(e!.transitions.map((t) => t.outcome)).toEqual(["applied", "duplicate"]);
  });
});
