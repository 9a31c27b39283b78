import { afterEach, expect, it } from "vitest";
import { purgeAll, purgeInbox } from "../../shared/retention/index.js";
import { describeEachBackend } from "../support/databases.js";
import { resetInbound } from "../inbound/helpers.js";
import { resetOutbound } from "../outbound/support/receiver.js";

describeEachBackend("inbox retention", (ctx) => {
  afterEach(async () => {
    await resetInbound(ctx.db);
    await resetOutbound(ctx.db);
  });

  /** An inbox entry in `status`, received `receivedDaysAgo` and (if processed) processed `processedDaysAgo`. */
  const entry = async (eventId: string, status: string, receivedDaysAgo: number, processedDaysAgo: number | null = null) => {
    const { rows } = await ctx.db.query<{ id: string }>(
      `INSERT INTO inbox_entries (partner_name, partner_event_id, event_type, payload, payload_sha256, signature_verified,
                                  received_at, status, next_attempt_at, processed_at)
       VALUES ('acme', $1, 'order.paid', convert_to('{}', 'UTF8'), 'sha', true,
               now() - make_interval(days => $2), $3, now(), now() - make_interval(days => $4))
       RETURNING id`,
      [eventId, receivedDaysAgo, status, processedDaysAgo],
    );
    return rows[0]!.id;
  };
  const kept = async () =>
    (await ctx.db.query<{ partner_event_id: string }>("SELECT partner_event_id FROM inbox_entries ORDER BY 1")).rows.map((r) => r.partner_event_id);

  it("deletes entries processed longer ago than the retention, with their conflicts and replays; nothing still owed work or quarantined", async () => {
    const old = await entry("old", "processed", 40, 40);
    await entry("old-2", "processed", 50, 45);
    await entry("recent", "processed", 3, 3);
    // Received long ago, processed only yesterday (deferred for weeks, or replayed): the clock starts at processing.
    await entry("late", "processed", 40, 1);
    for (const status of ["pending", "deferred", "failed", "quarantined"]) await entry(`ancient-${status}`, status, 400);
    await ctx.db.query("INSERT INTO inbox_replays (entry_id, requested_at, requested_by, previous_status) VALUES ($1, now(), 'test', 'quarantined')", [old]);
    await ctx.db.query(
      "INSERT INTO inbox_payload_conflicts (entry_id, payload_sha256, payload, first_seen_at, last_seen_at) VALUES ($1, 'other', convert_to('{}', 'UTF8'), now(), now())",
      [old],
    );

    expect(await purgeInbox(ctx.db, 30, { batchSize: 1 })).toBe(2);

    expect(await kept()).toEqual(["ancient-deferred", "ancient-failed", "ancient-pending", "ancient-quarantined", "late", "recent"]);
    expect((await ctx.db.query("SELECT 1 FROM inbox_replays")).rows).toEqual([]);
    expect((await ctx.db.query("SELECT 1 FROM inbox_payload_conflicts")).rows).toEqual([]);
    expect(await purgeInbox(ctx.db, 0)).toBe(0);
    await expect(purgeInbox(ctx.db, 3)).rejects.toThrow(/inboxProcessedDays must be 0 \(keep forever\) or a whole number of days ≥ 8, got 3/);
  });

  it("ignored entries (no handler took them) go like processed ones, counted from when they were settled", async () => {
    await entry("ignored-old", "ignored", 40, 40);
    await entry("ignored-recent", "ignored", 3, 3);
    expect(await purgeInbox(ctx.db, 30)).toBe(1);
    expect(await kept()).toEqual(["ignored-recent"]);
  });

  it("a retention run purges the outbox, then the inbox", async () => {
    await entry("gone", "processed", 20, 20);
    const result = await purgeAll(ctx.db, { deliveredDays: 30, deadDays: 0, inboxProcessedDays: 10 });
    expect(result).toEqual({ outbound: { deliveries: 0, attempts: 0, replays: 0, events: 0 }, inbox: { entries: 1 } });
    expect(await kept()).toEqual([]);
  });
});
