import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decide, defineMachine, MachineDefinitionError, replayInOrder, type Machine } from "../../shared/inbound/stateMachine.js";
import { orderMachine } from "../../examples/orders/handlers.js";

describe("reconciler decisions (order machine)", () => {
  it("applies an event whose source state is current", () => {
    expect(decide(orderMachine, null, "order.created")).toEqual({ kind: "apply", from: null, to: "created" });
    expect(decide(orderMachine, "paid", "order.shipped")).toEqual({ kind: "apply", from: "paid", to: "shipped" });
    expect(decide(orderMachine, "paid", "order.cancelled")).toEqual({ kind: "apply", from: "paid", to: "cancelled" });
  });

  it("calls an event for the current state a duplicate and one behind it stale", () => {
    expect(decide(orderMachine, "paid", "order.paid").kind).toBe("duplicate");
    expect(decide(orderMachine, "delivered", "order.paid").kind).toBe("stale");
    expect(decide(orderMachine, "cancelled", "order.created").kind).toBe("stale");
    expect(decide(orderMachine, "cancelled", "order.paid").kind).toBe("stale");
  });

  it("defers an event whose prerequisite can still arrive", () => {
    const d = decide(orderMachine, "created", "order.shipped");
    expect(d.kind).toBe("defer");
    expect(d.kind === "defer" && d.reason).toContain("needs state paid");
    expect(decide(orderMachine, null, "order.delivered").kind).toBe("defer");
  });

  it("rejects an event that can never apply, and an unknown type", () => {
    expect(decide(orderMachine, "cancelled", "order.shipped").kind).toBe("reject");
    expect(decide(orderMachine, "shipped", "order.cancelled").kind).toBe("reject");
    const unknown = decide(orderMachine, "paid", "order.refunded");
    expect(unknown.kind).toBe("reject");
    expect(unknown.kind === "reject" && unknown.reason).toContain('no event "order.refunded"');
  });

  it("refuses machines with cycles or unknown states, saying which", () => {
    expect(() => defineMachine({ name: "loop", states: ["a", "b"], events: { x: { from: ["a"], to: "b" }, y: { from: ["b"], to: "a" } } })).toThrow(MachineDefinitionError);
    expect(() => defineMachine({ name: "typo", states: ["a"], events: { x: { from: [null], to: "b" as "a" } } })).toThrow(/unknown state "b"/);
  });
});

/** The valid histories of an order, in order: every path the machine allows from creation. */
const HISTORIES: string[][] = [
  ["order.created"],
  ["order.created", "order.paid"],
  ["order.created", "order.paid", "order.shipped"],
  ["order.created", "order.paid", "order.shipped", "order.delivered"],
  ["order.created", "order.cancelled"],
  ["order.created", "order.paid", "order.cancelled"],
];

/**
 * A model of the processor in memory: events arrive in the given order; a deferred event waits
 * and is retried whenever the entity changes (the processor wakes entries deferred on an entity
 * when a transition applies). Returns the final state, what still waits, and the events applied.
 */
function simulate<S extends string, E extends string>(machine: Machine<S, E>, arrivals: readonly string[]) {
  let state: S | null = null;
  const applied: string[] = [];
  const deferred: string[] = [];
  const rejected: string[] = [];
  const offer = (event: string): boolean => {
    const d = decide(machine, state, event);
    if (d.kind === "apply") { state = d.to; applied.push(event); return true; }
    if (d.kind === "defer") deferred.push(event);
    if (d.kind === "reject") rejected.push(event);
    return false;
  };
  for (const event of arrivals) {
    if (!offer(event)) continue;
    // The entity changed: retry what waits, until a full pass changes nothing.
    let changed = true;
    while (changed) {
      changed = false;
      for (const e of deferred.splice(0)) if (offer(e)) changed = true;
    }
  }
  return { state, deferred, rejected, applied };
}

/** A history, then an arrival order: every event at least once, some several times, shuffled. */
const arrivalsArb = fc
  .constantFrom(...HISTORIES)
  .chain((history) =>
    fc.tuple(
      fc.constant(history),
      fc.array(fc.constantFrom(...history), { maxLength: 8 }).chain((dups) => fc.shuffledSubarray([...history, ...dups], { minLength: history.length + dups.length })),
    ),
  );

describe("reconciler convergence (property, in memory)", () => {
  it("any permutation with duplicates reaches the in-order final state; deferrals all resolve; no event applies twice", () => {
    fc.assert(
      fc.property(arrivalsArb, ([history, arrivals]) => {
        const expected = replayInOrder(orderMachine, history);
        const run = simulate(orderMachine, arrivals);
        expect(run.state).toBe(expected);
        expect(run.deferred).toEqual([]);
        expect(run.rejected).toEqual([]);
        // Each event type applies at most once (duplicates are no-ops). Without a cancel every one
        // applies; with one, a late "paid" after "cancelled" is rightly stale.
        expect(new Set(run.applied).size).toBe(run.applied.length);
        if (!history.includes("order.cancelled")) expect(run.applied).toEqual(history);
      }),
      { numRuns: 2000 },
    );
  });

  it("the in-order history itself applies every event (the histories are valid)", () => {
    for (const h of HISTORIES) expect(simulate(orderMachine, h).applied).toEqual(h);
  });
});
