/** Group commit: many concurrent stores, few INSERTs, the same answers as storeInboxEntry. */
import { beforeEach, expect, it } from "vitest";
import type { Queryable } from "../../shared/db/port.js";
import { isUnavailable } from "../../shared/db/port.js";
import { openPostgres } from "../../shared/db/postgres.js";
import { createGroupCommit } from "../../shared/inbound/groupCommit.js";
import { sha256Hex, type NewInboxEntry } from "../../shared/inbound/inbox.js";
import { describeEachBackend } from "../support/databases.js";
import { resetInbound } from "./helpers.js";

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
});
