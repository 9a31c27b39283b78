import { describe, expect, it } from "vitest";
import { createConcurrencyLimits, isOverload } from "../../shared/outbound/adaptiveConcurrency.js";

const ok = { result: "delivered", status: 204 } as const;
const timeout = { result: "retryable" as const, status: null, errorClass: "timeout" };
const refused = { result: "retryable" as const, status: null, errorClass: "connection_refused" };
const unavailable = { result: "retryable" as const, status: 503 };

describe("adaptive concurrency (AIMD per subscription)", () => {
  it("what counts as overload: timeouts, network errors, 5xx, 408; not 2xx, 429 nor other 4xx", () => {
    expect(([timeout, unavailable, { result: "retryable", status: 408 }] as const).map((o) => isOverload(o))).toEqual([true, true, true]);
    expect(([ok, { result: "retryable", status: 429 }, { result: "permanent", status: 400 }, { result: "gone", status: 410 }, { result: "permanent", status: null }] as const).map((o) => isOverload(o))).toEqual([false, false, false, false, false]);
  });

  it("a 429 neither lowers nor raises the limit (the receiver meters rate; the pace answers it), and still updates the latency", () => {
    const limits = createConcurrencyLimits({ initial: 8, max: 64 });
    for (let i = 0; i < 20; i++) limits.record("s", { result: "retryable", status: 429 }, i * 10, i * 10 + 4);
    expect(limits.limitOf("s")).toBe(8);
    expect(limits.latencyOf("s")).toBeCloseTo(4, 5);
  });

  it("a burst of 64 concurrent failures halves the limit once, not 64 times", () => {
    const limits = createConcurrencyLimits({ initial: 64, max: 64 });
    // 64 attempts started together at t=0 and failed within ~50 ms.
    for (let i = 0; i < 64; i++) limits.record("s", unavailable, 0, 1000 + i);
    expect(limits.limitOf("s")).toBe(32);
  });

  it("a timeout drops the limit to 1 at once (TCP's retransmission timeout), halving ssthresh; other failures halve it, 8 → 4 → 2 → 1", () => {
    const hangs = createConcurrencyLimits({ initial: 8, max: 64 });
    for (let i = 0; i < 8; i++) hangs.record("s", timeout, 0, 3000 + i); // one round of 8 runs to the timeout
    expect(hangs.limitOf("s")).toBe(1);
    for (let i = 0; i < 3; i++) hangs.record("s", ok, 4000, 4001 + i); // slow start back up to ssthresh (4)...
    expect(hangs.limitOf("s")).toBe(4);
    hangs.record("s", ok, 4000, 4010); // ...then one per round trip
    expect(hangs.limitOf("s")).toBe(4);
    const fails = createConcurrencyLimits({ initial: 8, max: 64 });
    const seen: number[] = [];
    let t = 0;
    for (let round = 0; round < 5; round++) {
      const started = t;
      t += 50;
      for (let i = 0; i < fails.limitOf("s"); i++) fails.record("s", refused, started, t + i);
      seen.push(fails.limitOf("s"));
      t += 10;
    }
    expect(seen).toEqual([4, 2, 1, 1, 1]); // and never below 1
  });

  it("recovers by slow start to half the old limit (doubling per round trip), then one per round trip", () => {
    const limits = createConcurrencyLimits({ initial: 64, max: 64 });
    limits.record("s", unavailable, 0, 10); // 64 → 32, ssthresh 32
    expect(limits.limitOf("s")).toBe(32);
    for (let i = 0; i < 32; i++) limits.record("s", ok, 20, 30);
    // Above ssthresh: +1/limit per answer, so a round trip of ~32 answers adds one.
    expect(limits.limitOf("s")).toBe(32);
    for (let i = 0; i < 33; i++) limits.record("s", ok, 20, 30);
    expect(limits.limitOf("s")).toBe(33);
    const fresh = createConcurrencyLimits({ initial: 8, max: 64 });
    for (let i = 0; i < 8; i++) fresh.record("t", ok, 0, 1);
    expect(fresh.limitOf("t")).toBe(16); // slow start: one round trip of 8 answers doubles it
    for (let i = 0; i < 200; i++) fresh.record("t", ok, 0, 1);
    expect(fresh.limitOf("t")).toBe(64); // capped at max
  });

  it("keeps a latency average per subscription and forgets idle ones", () => {
    const limits = createConcurrencyLimits();
    expect(limits.latencyOf("s")).toBeNull();
    limits.record("s", ok, 0, 10);
    limits.record("s", ok, 0, 20);
    expect(limits.latencyOf("s")).toBeCloseTo(12);
    limits.forgetIdle(1000, 5000);
    expect([...limits.known()]).toEqual([]);
    expect(limits.limitOf("s")).toBe(8);
  });
});
