/**
 * Your own inbound code: a handler module outside the repository (plain JavaScript written to a
 * temp dir), loaded as INBOUND_HANDLERS is; its own writes, the reconciler's state change, the
 * outbox event and the inbox update commit together or not at all; events no handler takes are
 * `ignored` (or quarantined, per partner) and replayable once a handler takes them.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import type { Database } from "../../shared/db/port.js";
import { createDispatchHandler } from "../../shared/inbound/dispatch.js";
import { getEntity } from "../../shared/inbound/entities.js";
import { defineHandler, HandlerDefinitionError, handlersOf } from "../../shared/inbound/handlers.js";
import { getInboxEntry } from "../../shared/inbound/inbox.js";
import { ingest } from "../../shared/inbound/ingest.js";
import { loadHandlers } from "../../shared/inbound/loadHandlers.js";
import { InboxProcessor } from "../../shared/inbound/processor.js";
import { replayEntry } from "../../shared/inbound/replay.js";
import { parsePartners } from "../../shared/inbound/verify/index.js";
import { describeEachBackend } from "../support/databases.js";
import { partners, resetInbound, SECRET, signed, TestClock } from "./helpers.js";

/** A user's module: no import from the platform at all (the loader validates plain objects). */
const MODULE = `
export const tickets = {
  name: "tickets",
  partners: ["shop"],
  machine: {
    name: "ticket",
    states: ["open", "closed"],
    events: { "ticket.opened": { from: [null], to: "open" }, "ticket.closed": { from: ["open"], to: "closed" } },
  },
  entityId: (event) => event.body?.data?.ticket_id,
  async handle(ctx) {
    await ctx.tx.query("INSERT INTO handler_test_log (ticket_id, state, inbox_entry_id) VALUES ($1, $2, $3)",
      [ctx.transition.entityId, ctx.transition.to, ctx.event.inboxEntryId]);
    if (ctx.event.body?.data?.fail_after_write) throw new Error("handler failed after its own write");
    await ctx.enqueue({ id: "ticket-" + ctx.event.inboxEntryId, type: "ticket." + ctx.transition.to, data: { ticket_id: ctx.transition.entityId } });
  },
};
export const notes = {
  name: "notes",
  events: ["note.*"],
  async handle(ctx) {
    await ctx.tx.query("INSERT INTO handler_test_log (ticket_id, state, inbox_entry_id) VALUES ($1, 'note', $2)", [ctx.event.body.data.ticket_id, ctx.event.inboxEntryId]);
  },
};
export default [tickets, notes];
`;

function writeModule(): string {
  const dir = mkdtempSync(join(tmpdir(), "user-handlers-"));
  const file = join(dir, "handlers.mjs");
  writeFileSync(file, MODULE);
  return file;
}

const ev = (type: string, data: Record<string, unknown>) => JSON.stringify({ type, data });

describe("defineHandler", () => {
  it("refuses what cannot run, saying what to fix", () => {
    expect(() => defineHandler({ name: "", handle: async () => {} })).toThrow(/give it a name/);
    expect(() => defineHandler({ name: "x", events: ["push"] })).toThrow(/handle\(ctx\) function, or a machine and entityId/);
    expect(() => defineHandler({ name: "x", events: ["not a type"], handle: async () => {} })).toThrow(HandlerDefinitionError);
    expect(() => defineHandler({ name: "x", handle: async () => {} })).toThrow(/list the event types/);
    const machine = { name: "m", states: ["a"], events: { "m.made": { from: [null], to: "a" } } };
    expect(() => defineHandler({ name: "x", machine })).toThrow(/needs entityId/);
    expect(() => defineHandler({ name: "x", machine: { ...machine, events: { "m.made": { from: [null], to: "b" } } }, entityId: () => "1" })).toThrow(/unknown state "b"/);
    // A machine's events are the default event list.
    expect(defineHandler({ name: "x", machine, entityId: () => "1" }).events).toEqual(["m.made"]);
    expect(() => handlersOf({})).toThrow(/exports no handlers/);
  });

  it("a partner's unhandled setting is ignore or quarantine, nothing else", () => {
    expect(parsePartners(JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [SECRET], unhandled: "ignore" } })).get("shop")?.unhandled).toBe("ignore");
    expect(() => parsePartners(JSON.stringify({ gh: { scheme: "github", secrets: ["s"], unhandled: "drop" } }))).toThrow(/partner "gh" \(github\): unhandled/);
  });

  it("INBOUND_HANDLERS that cannot load is a configuration error naming the path", async () => {
    await expect(loadHandlers("./does-not-exist.mjs", tmpdir())).rejects.toThrow(/INBOUND_HANDLERS: cannot load \.\/does-not-exist\.mjs/);
    expect(await loadHandlers(undefined)).toEqual([]);
  });
});

describeEachBackend("a user's handler module", (ctx) => {
  let clock: TestClock;
  const deliver = async (db: Database, id: string, body: string, partnerMap = partners): Promise<string> => {
    const d = signed(id, body, clock.now());
    const r = await ingest({ db, partners: partnerMap, maxBodyBytes: 65536, now: clock.now }, "shop", d.headers, d.body);
    if (r.status >= 300) throw new Error(`ingest answered ${r.status}: ${JSON.stringify(r.body)}`);
    return (r.body as { inboxId: string }).inboxId;
  };
  const log = async () => (await ctx.db.query<{ ticket_id: string; state: string }>("SELECT ticket_id, state FROM handler_test_log ORDER BY id")).rows;

  beforeEach(async () => {
    await resetInbound(ctx.db);
    await ctx.db.query("CREATE TABLE IF NOT EXISTS handler_test_log (id serial PRIMARY KEY, ticket_id text NOT NULL, state text NOT NULL, inbox_entry_id uuid NOT NULL)");
    await ctx.db.query("TRUNCATE handler_test_log");
    clock = new TestClock(new Date("2026-03-01T12:00:00Z"));
  });

  it("loads a module from outside the repository; reconciles its machine with the platform's entity state; its writes and outbox events commit with the change", async () => {
    const handlers = await loadHandlers(writeModule());
    const p = new InboxProcessor({ db: ctx.db, handler: createDispatchHandler(handlers), now: clock.now });
    // Out of order: the close waits for the open.
    const closed = await deliver(ctx.db, "t1-closed", ev("ticket.closed", { ticket_id: "t1" }));
    await deliver(ctx.db, "t1-opened", ev("ticket.opened", { ticket_id: "t1" }));
    await deliver(ctx.db, "n1", ev("note.added", { ticket_id: "t1" }));
    await p.drain();
    expect((await getEntity(ctx.db, "ticket", "t1"))?.state).toBe("closed");
    // The note applies in the first round; the close after the open (it was deferred, then woken).
    expect((await log()).map((r) => r.state)).toEqual(["open", "note", "closed"]);
    const outbound = await ctx.db.query<{ type: string }>("SELECT type FROM outbound_events WHERE id = ANY($1::text[])", [[`ticket-${closed}`]]);
    expect(outbound.rows).toEqual([{ type: "ticket.closed" }]);
    expect(await getInboxEntry(ctx.db, closed)).toMatchObject({ status: "processed", outcome: "applied", entityKey: "ticket:t1" });
  });

  it("a handler that throws after its own write leaves nothing: no write, no state change, no outbox event; the entry is retried", async () => {
    const handlers = await loadHandlers(writeModule());
    const p = new InboxProcessor({ db: ctx.db, handler: createDispatchHandler(handlers), now: clock.now });
    const id = await deliver(ctx.db, "t2-opened", ev("ticket.opened", { ticket_id: "t2", fail_after_write: true }));
    expect(await p.runOnce()).toMatchObject({ failed: 1 });
    expect(await log()).toEqual([]);
    expect(await getEntity(ctx.db, "ticket", "t2")).toBeUndefined();
    expect((await ctx.db.query("SELECT 1 FROM outbound_events WHERE id = $1", [`ticket-${id}`])).rows).toEqual([]);
    expect(await getInboxEntry(ctx.db, id)).toMatchObject({ status: "failed", failures: 1 });
    expect((await getInboxEntry(ctx.db, id))!.lastError).toContain("handler failed after its own write");
  });

  it("an event no handler takes is ignored (visible, replayable); replayed once a handler takes it, it applies", async () => {
    const none = new InboxProcessor({ db: ctx.db, handler: createDispatchHandler([]), now: clock.now });
    const id = await deliver(ctx.db, "t3-opened", ev("ticket.opened", { ticket_id: "t3" }));
    expect(await none.runEntry(id)).toMatchObject({ result: "processed", status: "ignored", nextAttemptAt: null });
    const ignored = await getInboxEntry(ctx.db, id);
    expect(ignored).toMatchObject({ status: "ignored", outcome: "ignored", nextAttemptAt: null });
    expect(ignored!.lastError).toBe("no handler takes shop events of type ticket.opened");
    expect((await none.drain()).claimed).toBe(0); // settled: not looked at again

    expect(await replayEntry(ctx.db, id, { by: "test", now: clock.now() })).toMatchObject({ kind: "replayed", previousStatus: "ignored" });
    const withHandlers = new InboxProcessor({ db: ctx.db, handler: createDispatchHandler(await loadHandlers(writeModule())), now: clock.now });
    await withHandlers.drain();
    expect(await getInboxEntry(ctx.db, id)).toMatchObject({ status: "processed", outcome: "applied", replays: 1 });
    expect((await getEntity(ctx.db, "ticket", "t3"))?.state).toBe("open");
  });

  it("a partner configured with unhandled: quarantine gets its unhandled events quarantined; a handler for another partner does not take them", async () => {
    const strict = parsePartners(JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [SECRET], unhandled: "quarantine" } }));
    const onlyGithub = defineHandler({ name: "gh", partners: ["github"], events: ["*"], handle: async () => { throw new Error("must not run"); } });
    const p = new InboxProcessor({ db: ctx.db, handler: createDispatchHandler([onlyGithub], { quarantineUnhandled: new Set(["shop"]) }), now: clock.now });
    const id = await deliver(ctx.db, "q1", ev("ticket.opened", { ticket_id: "t4" }), strict);
    await p.drain();
    expect(await getInboxEntry(ctx.db, id)).toMatchObject({ status: "quarantined", outcome: "rejected", quarantineReason: "no handler takes shop events of type ticket.opened" });
  });
});
