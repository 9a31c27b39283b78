/**
 * The scheduled relay's budget rules, with stand-ins for the relay and the retention pass (their
 * own behaviour is tested against real databases elsewhere; here only the order and the budget).
 */
import { describe, expect, it } from "vitest";
import { drainOutbox } from "../../shared/cloud/drainOutbox.js";

const none = { deliveries: 0, attempts: 0, replays: 0, events: 0 };

describe("drainOutbox", () => {
  it("drains first, then gives the time left to retention, which stops when the reserve is reached", async () => {
    let now = 0;
    const passes = [50, 20, 0];
    const order: string[] = [];
    const summary = await drainOutbox({
      relay: { runOnce: async () => { order.push("pass"); now += 10_000; return passes.shift()!; } },
      remainingMs: () => 100_000 - now,
      purge: async (shouldStop) => {
        order.push("purge");
        let batches = 0;
        while (!shouldStop()) { batches += 1; now += 10_000; }
        return { ...none, deliveries: batches };
      },
    });
    expect(order).toEqual(["pass", "pass", "pass", "purge"]);
    expect(summary).toEqual({ passes: 3, deliveriesAttempted: 70, inboxEntriesClaimed: 0, stoppedBecause: "idle", purged: { ...none, deliveries: 6 } });
    expect(100_000 - now).toBeLessThan(15_000); // stopped at the reserve…
    expect(100_000 - now).toBeGreaterThanOrEqual(5_000); // …not long after it
  });

  it("skips retention when the budget went to deliveries", async () => {
    let now = 0;
    let purged = false;
    const summary = await drainOutbox({
      relay: { runOnce: async () => { now += 30_000; return 100; } },
      remainingMs: () => 60_000 - now,
      purge: async () => { purged = true; return none; },
    });
    expect(summary).toMatchObject({ stoppedBecause: "budget", passes: 2 });
    expect(summary.purged).toBeUndefined();
    expect(purged).toBe(false);
  });
});
