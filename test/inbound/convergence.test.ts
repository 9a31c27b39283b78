/**
 * The convergence property through the real path: signed deliveries → ingest → inbox → processor
 * → the order example's entities, on both backends. (The 2000-run version on the pure reconciler is in
 * reconciler.test.ts; this one is smaller because each run is a handful of transactions.)
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { ingest } from "../../shared/inbound/ingest.js";
import { orderMachine } from "../../examples/orders/handlers.js";
import { replayInOrder } from "../../shared/inbound/stateMachine.js";
import { describeEachBackend } from "../support/databases.js";
import { orderEvent, orderProcessor, orderState, partners, signed, TestClock } from "./helpers.js";

const HISTORIES = [
  ["order.created", "order.paid", "order.shipped", "order.delivered"],
  ["order.created", "order.paid", "order.shipped"],
  ["order.created", "order.cancelled"],
  ["order.created", "order.paid", "order.cancelled"],
];

/** One delivery: which event of the history, whether it re-sends an earlier webhook id, whether a processor round follows. */
const runArb = fc.constantFrom(...HISTORIES).chain((history) =>
  fc.tuple(
    fc.constant(history),
    fc
      .array(fc.record({ index: fc.nat({ max: history.length - 1 }), sameId: fc.boolean() }), { maxLength: 6 })
      .chain((dups) =>
        fc.shuffledSubarray(
          [...history.map((_, index) => ({ index, sameId: true })), ...dups],
          { minLength: history.length + dups.length },
        ),
      ),
    fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
  ),
);

let runCounter = 0;

describeEachBackend("convergence through ingest and the processor (property)", (ctx) => {
  it("any arrival order with duplicates ends in the in-order state, nothing left deferred, each transition applied once", async () => {
    const clock = new TestClock(new Date("2026-03-01T12:00:00Z"));
    const processor = orderProcessor(ctx.db, clock);
    const deps = { db: ctx.db, partners, maxBodyBytes: 65536, now: clock.now };

    await fc.assert(
      fc.asyncProperty(runArb, async ([history, arrivals, roundAfter]) => {
        const orderId = `prop-${ctx.backend}-${++runCounter}`;
        for (const [i, a] of arrivals.entries()) {
          const type = history[a.index]!;
          // Same webhook id: the partner retrying (the inbox absorbs it). New id: the same fact sent twice (the reconciler does).
          const id = a.sameId ? `${orderId}-${type}` : `${orderId}-${type}-again-${i}`;
          const d = signed(id, orderEvent(orderId, type), clock.now());
          const r = await ingest(deps, "shop", d.headers, d.body);
          expect([200, 202]).toContain(r.status);
          if (roundAfter[i % roundAfter.length]) await processor.runOnce();
        }
        await processor.drain();

        expect(await orderState(ctx.db, orderId)).toBe(replayInOrder(orderMachine, history));
        const open = await ctx.db.query<{ status: string }>(
          "SELECT status FROM inbox_entries WHERE entity_key = $1 AND status <> 'processed'",
          [`order:${orderId}`],
        );
        expect(open.rows).toEqual([]);
        const applied = await ctx.db.query<{ event_type: string }>(
          "SELECT event_type FROM inbound_transitions WHERE machine = 'order' AND entity_id = $1 AND outcome = 'applied'",
          [orderId],
        );
        const types = applied.rows.map((r) => r.event_type);
        expect(new Set(types).size).toBe(types.length);
        if (!history.includes("order.cancelled")) expect(types.sort()).toEqual([...history].sort());
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
