/**
 * The scheduled relay's budget rules, with stand-ins for the relay and the retention pass (their
 * own behaviour is tested against real databases elsewhere; here only the order and the budget).
 */
import { describe, expect, it } from "vitest";
import { drainOutbox } from "../../shared/cloud/drainOutbox.js";

const none = { outbound: { deliveries: 0, attempts: 0, replays: 0, events: 0 }, inbox: { entries: 0 } };
const deleted = (deliveries: number) => ({ ...none, outbound: { ...none.outbound, deliveries } });

describe("drainOutbox", () => {
  it("drains first, then gives the time left to retention, which stops at the purge reserve", async () => {
    let now = 0;
    const passes = [50, 20, 0];
    const order: string[] = [];
    const summary = await drainOutbox({
      relay: { runOnce: async () => { order.push("pass"); now += 10_000; return passes.shift()!; } },
      remainingMs: () => 100_000 - now,
      purge: async (shouldStop) => {
        order.push("purge");
        let batches = 0;
        while (!shouldStop()) { batches += 1; now += 1_000; }
        return deleted(batches);
      },
    });
    expect(order).toEqual(["pass", "pass", "pass", "purge"]);
    // 70 s left after the passes, 1 s a batch, stopped once under the 5 s purge reserve.
    expect(summary).toEqual({ passes: 3, deliveriesAttempted: 70, inboxEntriesClaimed: 0, stoppedBecause: "idle", purged: deleted(66) });
    expect(100_000 - now).toBe(4_000);
  });

  it("a relay kept busy to the end of its budget still purges, in the slice before the purge reserve", async () => {
    let now = 0;
    let batches = 0;
    const summary = await drainOutbox({
      relay: { runOnce: async () => { now += 30_000; return 100; } },
      remainingMs: () => 70_000 - now,
      purge: async (shouldStop) => {
        while (!shouldStop()) { batches += 1; now += 1_000; }
        return deleted(batches);
      },
    });
    expect(summary).toMatchObject({ stoppedBecause: "budget", passes: 2, purged: deleted(6) }); // 10 s left, stops under 5 s
    expect(70_000 - now).toBe(4_000);
  });

  it("skips retention when less than the purge reserve is left, or when none is due", async () => {
    let purgeCalls = 0;
    const tight = await drainOutbox({
      relay: { runOnce: async () => 0 },
      remainingMs: () => 4_000,
      purge: async () => { purgeCalls += 1; return none; },
    });
    expect(tight).toEqual({ passes: 0, deliveriesAttempted: 0, inboxEntriesClaimed: 0, stoppedBecause: "budget" });
    expect(purgeCalls).toBe(0);
    const notDue = await drainOutbox({ relay: { runOnce: async () => 0 }, remainingMs: () => 60_000, purge: async () => null });
    expect(notDue).toEqual({ passes: 1, deliveriesAttempted: 0, inboxEntriesClaimed: 0, stoppedBecause: "idle" });
  });

  it("a failed retention pass is reported in the summary and does not fail the run", async () => {
    const summary = await drainOutbox({
      relay: { runOnce: async () => 0 },
      remainingMs: () => 60_000,
      purge: async () => { throw new Error("canceling statement due to lock timeout"); },
    });
    expect(summary).toMatchObject({ stoppedBecause: "idle", purgeError: "canceling statement due to lock timeout" });
    expect(summary.purged).toBeUndefined();
  });
  it("scans for alerts before each pass, keeps going while a scan raised some, and survives a failed scan", async () => {
    const order: string[] = [];
    const raised = [0, 2, 0];
    const summary = await drainOutbox({
      relay: { runOnce: async () => { order.push("pass"); return order.length === 2 ? 1 : 0; } },
      alerts: async () => { order.push("scan"); return raised.shift()!; },
      remainingMs: () => 60_000,
    });
    // scan 0 → pass 1 delivery → scan 2 alerts → pass 0 (alerts still to send would be claimed here) → scan 0 → pass 0: idle.
    expect(order).toEqual(["scan", "pass", "scan", "pass", "scan", "pass"]);
    expect(summary).toMatchObject({ passes: 3, alertsRaised: 2, stoppedBecause: "idle" });
    expect(summary.alertError).toBeUndefined();

    const failing = await drainOutbox({
      relay: { runOnce: async () => 0 },
      alerts: async () => { throw new Error("database busy"); },
      remainingMs: () => 60_000,
    });
    expect(failing).toMatchObject({ passes: 1, alertsRaised: 0, alertError: "database busy", stoppedBecause: "idle" });
  });
});
