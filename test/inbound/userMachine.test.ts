/**
 * Must-show: the reconciler converges for a machine the user defines (not the order example):
 * any arrival order of a valid history, with re-sent and repeated events, reaches the state the
 * in-order history reaches, through ingest, the dispatcher and the processor, with the entity state
 * and transition log kept by the platform; on both backends.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { createDispatchHandler } from "../../shared/inbound/dispatch.js";
import { entityState } from "../../shared/inbound/entities.js";
import { defineHandler, defineMachine } from "../../shared/inbound/handlers.js";
import { ingest } from "../../shared/inbound/ingest.js";
import { InboxProcessor } from "../../shared/inbound/processor.js";
import { replayInOrder } from "../../shared/inbound/stateMachine.js";
import { describeEachBackend } from "../support/databases.js";
import { partners, signed, TestClock } from "./helpers.js";

// A carrier's shipments: a branching, acyclic machine with two end states after transit.
const shipment = defineMachine({
  name: "shipment",
  states: ["booked", "in_transit", "delivered", "lost", "cancelled"],
  events: {
    "shipment.booked": { from: [null], to: "booked" },
    "shipment.picked_up": { from: ["booked"], to: "in_transit" },
    "shipment.delivered": { from: ["in_transit"], to: "delivered" },
    "shipment.lost": { from: ["in_transit"], to: "lost" },
    "shipment.cancelled": { from: ["booked"], to: "cancelled" },
  },
});

const handlers = [defineHandler({ name: "shipments", machine: shipment, entityId: (e) => e.body?.shipment?.id })];

const HISTORIES = [
  ["shipment.booked", "shipment.picked_up", "shipment.delivered"],
  ["shipment.booked", "shipment.picked_up", "shipment.lost"],
  ["shipment.booked", "shipment.cancelled"],
  ["shipment.booked", "shipment.picked_up"],
];

const runArb = fc.constantFrom(...HISTORIES).chain((history) =>
  fc.tuple(
    fc.constant(history),
    fc
      .array(fc.record({ index: fc.nat({ max: history.length - 1 }), sameId: fc.boolean() }), { maxLength: 5 })
      .chain((dups) => fc.shuffledSubarray([...history.map((_, index) => ({ index, sameId: true })), ...dups], { minLength: history.length + dups.length })),
    fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }),
  ),
);

let run = 0;

describeEachBackend("a user-defined machine converges (property)", (ctx) => {
  it("any arrival order of a valid history ends in the in-order state, each transition applied once, nothing left open", async () => {
    const clock = new TestClock(new Date("2026-03-01T12:00:00Z"));
    const processor = new InboxProcessor({ db: ctx.db, handler: createDispatchHandler(handlers), now: clock.now });
    const deps = { db: ctx.db, partners, maxBodyBytes: 65536, now: clock.now };
    await fc.assert(
      fc.asyncProperty(runArb, async ([history, arrivals, roundAfter]) => {
        const id = `ship-${ctx.backend}-${++run}`;
        for (const [i, a] of arrivals.entries()) {
          const type = history[a.index]!;
          const webhookId = a.sameId ? `${id}-${type}` : `${id}-${type}-again-${i}`;
          const d = signed(webhookId, JSON.stringify({ type, shipment: { id } }), clock.now());
          expect([200, 202]).toContain((await ingest(deps, "shop", d.headers, d.body)).status);
          if (roundAfter[i % roundAfter.length]) await processor.runOnce();
        }
        await processor.drain();
        expect(await entityState(ctx.db, "shipment", id)).toBe(replayInOrder(shipment, history));
        const open = await ctx.db.query("SELECT status FROM inbox_entries WHERE entity_key = $1 AND status <> 'processed'", [`shipment:${id}`]);
        expect(open.rows).toEqual([]);
        const applied = await ctx.db.query<{ event_type: string }>(
          "SELECT event_type FROM inbound_transitions WHERE machine = 'shipment' AND entity_id = $1 AND outcome = 'applied'", [id]);
        expect(applied.rows.map((r) => r.event_type).sort()).toEqual([...history].sort());
      }),
      { numRuns: 30 },
    );
  }, 120_000);
});
