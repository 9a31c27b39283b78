/** Group commit: many concurrent stores, few INSERTs, the same answers as storeInboxEntry. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Queryable } from "../../shared/db/port.js";
import { isUnavailable } from "../../shared/db/port.js";
import { openPostgres } from "../../shared/db/postgres.js";
import { createGroupCommit } from "../../shared/inbound/groupCommit.js";
import { sha256Hex, type NewInboxEntry } from "../../shared/inbound/inbox.js";
import { ingest, type IngestDeps } from "../../shared/inbound/ingest.js";
import { describeEachBackend } from "../support/databases.js";
import { orderEvent, partners, resetInbound, signed, TestClock } from "./helpers.js";

const at = new Date("2026-03-01T12:00:00Z");
const entry = (id: string, body = `{"id":"${id}"}`): NewInboxEntry => ({
  partnerName: "shop", partnerEventId: id, eventType: "order.created", payload: Buffer.from(body), signatureVerified: true, receivedAt: at,
});

/** Counts the statements that reach the database (the real one, underneath). */
function counting(db: Queryable): Queryable & { statements: string[] } {
  const statements: string[] = [];
  return {
    statements,
    query: (text, values) => {
      statements.push(text.trim().split(/\s+/).slice(0, 2).join(" "));
      return db.query(text, values);
    },
  };
}

/**
 * The real database, with each batch INSERT held until the test opens the gate, so the test can
 * see what the group commit does while an INSERT is in flight. `batches` has each INSERT's size.
 */
function gated(db: Queryable): Queryable & { batches: number[]; open(): void } {
  const batches: number[] = [];
  const held: Array<() => void> = [];
  let opened = false;
  return {
    batches,
    open() {
      opened = true;
      for (const go of held.splice(0)) go();
    },
    async query(text, values) {
      if (/^\s*INSERT INTO inbox_entries/.test(text) && Array.isArray(values?.[0])) {
        batches.push((values[0] as unknown[]).length);
        if (!opened) await new Promise<void>((go) => held.push(go));
      }
      return db.query(text, values);
    },
  };
}

/** Lets every pending setImmediate (the group commit's pump) and the microtasks it starts run. */
const turn = () => new Promise<void>((r) => setImmediate(r));

describeEachBackend("inbox group commit", (ctx) => {
  beforeEach(async () => {
    await resetInbound(ctx.db);
  });

  it("stores 500 concurrent entries with far fewer INSERTs, each caller getting its own row id", async () => {
    const db = counting(ctx.db);
    const inbox = createGroupCommit(db, { maxInFlight: 2, maxBatch: 100 });
    const results = await Promise.all(Array.from({ length: 500 }, (_, i) => inbox.store(entry(`evt_${i}`))));
    expect(results.every((r) => r.kind === "stored")).toBe(true);
    const rows = (await ctx.db.query<{ id: string; partner_event_id: string; payload: Uint8Array; payload_sha256: string; status: string }>(
      "SELECT id, partner_event_id, payload, payload_sha256, status FROM inbox_entries")).rows;
    expect(rows).toHaveLength(500);
    const byEvent = new Map(rows.map((r) => [r.partner_event_id, r]));
    results.forEach((r, i) => {
      const row = byEvent.get(`evt_${i}`)!;
      expect(r.id).toBe(row.id);
      expect(Buffer.from(row.payload).toString()).toBe(`{"id":"evt_${i}"}`);
      expect(row.payload_sha256).toBe(sha256Hex(Buffer.from(`{"id":"evt_${i}"}`)));
      expect(row.status).toBe("pending");
    });
    expect(db.statements.length).toBeGreaterThanOrEqual(5); // at most 100 per INSERT
    expect(db.statements.length).toBeLessThan(50);
  });

  it("duplicates, in the same batch or later, answer duplicate; different bytes answer mismatch", async () => {
    const inbox = createGroupCommit(ctx.db);
    const [a, b, c] = await Promise.all([inbox.store(entry("evt_d")), inbox.store(entry("evt_d")), inbox.store(entry("evt_d", '{"other":1}'))]);
    expect(a.kind).toBe("stored");
    expect(b).toEqual({ kind: "duplicate", id: a.id });
    expect(c).toEqual({ kind: "mismatch", id: a.id });
    expect(await inbox.store(entry("evt_d"))).toEqual({ kind: "duplicate", id: a.id });
    const n = await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM inbox_entries");
    expect(Number(n.rows[0]?.n)).toBe(1);
  });

  it("one bad entry fails alone; the others in its batch are stored", async () => {
    const inbox = createGroupCommit(ctx.db);
    const bad = { ...entry("evt_bad"), partnerName: "p".repeat(65) }; // violates the CHECK on partner_name
    const settled = await Promise.allSettled([inbox.store(entry("evt_ok1")), inbox.store(bad), inbox.store(entry("evt_ok2"))]);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const ids = (await ctx.db.query<{ partner_event_id: string }>("SELECT partner_event_id FROM inbox_entries ORDER BY 1")).rows.map((r) => r.partner_event_id);
    expect(ids).toEqual(["evt_ok1", "evt_ok2"]);
  });

  it("when the database is unavailable every caller's promise rejects (so none answers 2xx)", async () => {
    // A real pool pointed at a port where nothing listens: the connection is refused.
    const down = openPostgres({ connectionString: "postgres://postgres@127.0.0.1:1/none", connectionTimeoutMillis: 500 });
    try {
      const inbox = createGroupCommit(down);
      const settled = await Promise.allSettled([inbox.store(entry("evt_1")), inbox.store(entry("evt_2")), inbox.store(entry("evt_3"))]);
      expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected", "rejected"]);
      expect(settled.every((s) => s.status === "rejected" && isUnavailable(s.reason))).toBe(true);
      await inbox.drain();
    } finally {
      await down.close();
    }
  });

  it("while an INSERT is in flight, arrivals wait for it, until busyBatch of them start another beside it", async () => {
    const db = gated(ctx.db);
    const inbox = createGroupCommit(db, { maxInFlight: 2, busyBatch: 3 });
    const stores = [inbox.store(entry("evt_g1"))];
    await turn();
    expect(db.batches).toEqual([1]); // nothing in flight: the first entry leaves at once
    for (const id of ["evt_g2", "evt_g3"]) {
      stores.push(inbox.store(entry(id)));
      await turn();
    }
    expect(db.batches).toEqual([1]); // two wait: fewer than busyBatch, so no second INSERT yet
    stores.push(inbox.store(entry("evt_g4")));
    await turn();
    expect(db.batches).toEqual([1, 3]); // the third waiting one starts a second INSERT beside the first
    for (const id of ["evt_g5", "evt_g6", "evt_g7", "evt_g8"]) stores.push(inbox.store(entry(id)));
    await turn();
    expect(db.batches).toEqual([1, 3]); // maxInFlight reached: they wait whatever their number
    db.open();
    const results = await Promise.all(stores);
    expect(db.batches).toEqual([1, 3, 4]);
    expect(results.map((r) => r.kind)).toEqual(Array(8).fill("stored"));
    expect(new Set(results.map((r) => r.id)).size).toBe(8);
    const n = await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM inbox_entries");
    expect(Number(n.rows[0]?.n)).toBe(8);
  });

  describe("through ingest, when the database refuses rows", () => {
    const clock = new TestClock(new Date());
    const deliveries = (n: number, prefix: string) =>
      Array.from({ length: n }, (_, i) => signed(`${prefix}${i}`, orderEvent(`o-${prefix}${i}`, "order.created"), clock.now()));
    const refuse = async (condition: string) => {
      // A real refusal by the real database: a trigger raising for the rows that match.
      await ctx.db.query(`CREATE OR REPLACE FUNCTION test_refuse_inbox() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF ${condition} THEN RAISE EXCEPTION 'refused by the test trigger'; END IF; RETURN NEW; END $$`);
      await ctx.db.query("CREATE TRIGGER test_refuse_inbox BEFORE INSERT ON inbox_entries FOR EACH ROW EXECUTE FUNCTION test_refuse_inbox()");
    };
    afterEach(async () => {
      await ctx.db.query("DROP TRIGGER IF EXISTS test_refuse_inbox ON inbox_entries");
      await ctx.db.query("DROP FUNCTION IF EXISTS test_refuse_inbox()");
    });
    const depsWith = (store: IngestDeps["store"]): IngestDeps => ({ db: ctx.db, partners, maxBodyBytes: 4096, now: clock.now, store });

    it("a failing batch answers 503 with Retry-After to each of its requests, never 2xx, and stores none", async () => {
      await refuse("true");
      const inbox = createGroupCommit(ctx.db, { maxBatch: 8, maxInFlight: 2, busyBatch: 4 });
      const sent = deliveries(30, "evt_f");
      const answers = await Promise.all(sent.map((d) => ingest(depsWith(inbox.store), "shop", d.headers, d.body)));
      for (const a of answers) {
        expect(a.status).toBe(503);
        expect(a.headers["retry-after"]).toBe("5");
        expect(a.body).toMatchObject({ error: { code: "storage_failed" } });
      }
      const n = await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM inbox_entries");
      expect(Number(n.rows[0]?.n)).toBe(0);
    });

    it("in a batch with refused rows, exactly the stored events get 2xx and the refused ones 503", async () => {
      await refuse("NEW.partner_event_id LIKE 'evt_p_%'");
      const inbox = createGroupCommit(ctx.db, { maxBatch: 8, maxInFlight: 2, busyBatch: 4 });
      const sent = deliveries(30, "evt_m").map((d, i) => (i % 5 === 2 ? signed(`evt_p_${i}`, d.body.toString(), clock.now()) : d));
      const answers = await Promise.all(sent.map((d) => ingest(depsWith(inbox.store), "shop", d.headers, d.body)));
      const accepted = new Map<string, string>();
      answers.forEach((a, i) => {
        const id = sent[i]!.headers["webhook-id"]!;
        if (id.startsWith("evt_p_")) expect(a.status).toBe(503);
        else {
          expect(a.status).toBe(202);
          accepted.set(id, (a.body as { inboxId: string }).inboxId);
        }
      });
      expect(accepted.size).toBe(24);
      const rows = (await ctx.db.query<{ id: string; partner_event_id: string }>("SELECT id, partner_event_id FROM inbox_entries")).rows;
      expect(new Map(rows.map((r) => [r.partner_event_id, String(r.id)]))).toEqual(accepted);
    });
  });
});
