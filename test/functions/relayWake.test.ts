import { describe, expect, it } from "vitest";
import { coalescedWaker, wakeOnFirstUse, type RelayWaker } from "../../shared/cloud/relayWake.js";

/** A send that resolves when told, counting calls; the clock is the test's. */
function sender() {
  let calls = 0;
  let fail = false;
  const pending: (() => void)[] = [];
  return {
    get calls() { return calls; },
    failNext() { fail = true; },
    send: () => {
      calls++;
      if (fail) { fail = false; return Promise.reject(new Error("throttled")); }
      return new Promise<void>((resolve) => pending.push(resolve));
    },
    finish() { for (const r of pending.splice(0)) r(); },
  };
}

describe("the management function's relay wake-up (scheduled mode)", () => {
  it("writes that arrive while a wake-up is being sent share it", async () => {
    const s = sender();
    let t = 0;
    const waker = coalescedWaker(s.send, { minGapMs: 2000, now: () => t });
    const a = waker.wake();
    const b = waker.wake();
    expect(s.calls).toBe(1);
    s.finish();
    await Promise.all([a, b]);
  });

  it("a wake-up stands for minGapMs: later writes within it send nothing, the first after it sends again", async () => {
    const s = sender();
    let t = 0;
    const waker = coalescedWaker(s.send, { minGapMs: 2000, now: () => t });
    const first = waker.wake();
    s.finish();
    await first;
    t = 1999;
    await waker.wake();
    expect(s.calls).toBe(1);
    t = 2000;
    const again = waker.wake();
    expect(s.calls).toBe(2);
    s.finish();
    await again;
  });

  it("a failed send rejects (the caller logs it) and is not taken as sent: the next write tries again at once", async () => {
    const s = sender();
    const waker = coalescedWaker(s.send, { minGapMs: 2000, now: () => 0 });
    s.failNext();
    await expect(waker.wake()).rejects.toThrow("throttled");
    const next = waker.wake();
    expect(s.calls).toBe(2);
    s.finish();
    await next;
  });
});

describe("wakeOnFirstUse (each cloud's management wakeRelay)", () => {
  it("opens the waker on the first wake-up only and keeps it; an open that failed is tried again at the next wake-up", async () => {
    let opens = 0;
    let wakes = 0;
    let failOpen = true;
    const waker: RelayWaker = { wake: async () => { wakes++; } };
    const wakeRelay = wakeOnFirstUse(async () => {
      opens++;
      if (failOpen) { failOpen = false; throw new Error("namespace unreachable"); }
      return waker;
    });
    expect(opens, "nothing opened before the first wake-up").toBe(0);
    await expect(wakeRelay()).rejects.toThrow("namespace unreachable");
    await wakeRelay();
    await wakeRelay();
    expect(opens, "the failed open is tried again once, then kept").toBe(2);
    expect(wakes).toBe(2);
  });
});
