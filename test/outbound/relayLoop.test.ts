import { describe, expect, it } from "vitest";
import { createRelayLoop } from "../../shared/outbound/relayLoop.js";
import { waitFor } from "./support/receiver.js";

/** An in-memory store for the loop: a queue of numbers, a record of completions. */
function harness(total: number, options: { failCompletes?: number; slow?: number } = {}) {
  const queue = Array.from({ length: total }, (_, i) => i);
  const completed: number[] = [];
  const released: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let failCompletes = options.failCompletes ?? 0;
  const errors: string[] = [];
  /** The loop whose `held` count is sampled at each process call, once `watch` names it. */
  let watched: { held: number } | null = null;
  let maxHeld = 0;
  const callbacks = {
    async claim(limit: number) {
      return queue.splice(0, limit);
    },
    async process(item: number) {
      if (watched) maxHeld = Math.max(maxHeld, watched.held);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, options.slow ?? 1));
      inFlight--;
      return item;
    },
    async complete(results: number[]) {
      if (failCompletes > 0) {
        failCompletes--;
        throw new Error("database blinked");
      }
      completed.push(...results);
    },
    async release(items: number[]) { released.push(...items); },
    onError(error: unknown, stage: string) { errors.push(`${stage}: ${(error as Error).message}`); },
  };
  return {
    callbacks, completed, released, errors, queue,
    get maxInFlight() { return maxInFlight; },
    /** Most items the watched loop held when one started processing. */
    get maxHeld() { return maxHeld; },
    watch(loop: { held: number }) { watched = loop; },
  };
}

describe("relay loop (no database)", () => {
  it("turns go round the groups: a group whose items hang holds at most its turns, the others run meanwhile", async () => {
    // Items 0–99 belong to "stuck" (they hang until released), 100–119 to "quick".
    const queue = [...Array.from({ length: 100 }, (_, i) => i), ...Array.from({ length: 20 }, (_, i) => 100 + i)];
    let unhang!: () => void;
    const hang = new Promise<void>((r) => { unhang = r; });
    const busy = new Map<string, number>();
    let mostStuck = 0;
    const completed: number[] = [];
    const key = (n: number) => (n < 100 ? "stuck" : "quick");
    const loop = createRelayLoop<number, number>({
      claim: async (limit) => queue.splice(0, limit),
      async process(n) {
        busy.set(key(n), (busy.get(key(n)) ?? 0) + 1);
        mostStuck = Math.max(mostStuck, busy.get("stuck") ?? 0);
        await (n < 100 ? hang : new Promise((r) => setTimeout(r, 1)));
        busy.set(key(n), busy.get(key(n))! - 1);
        return n;
      },
      complete: async (results) => { completed.push(...results); },
      release: async () => {},
      onError: () => {},
    }, { batchSize: 200, concurrency: 200, processConcurrency: 16, pollIntervalMs: 5, shutdownTimeoutMs: 5000, keyOf: key, turnsFor: (k) => (k === "stuck" ? 3 : 8) });
    loop.start();
    await waitFor("the quick group done while the stuck one hangs", () => completed.filter((n) => n >= 100).length === 20);
    expect(completed.filter((n) => n < 100)).toEqual([]);
    expect(mostStuck).toBe(3);
    expect(loop.unfinished("stuck")).toBe(100); // 3 processing, 97 waiting for a turn
    unhang();
    await waitFor("all done", () => completed.length === 120);
    await loop.stop();
  });

  it("processes everything, never holding more than `concurrency` items", async () => {
    const h = harness(200);
    const loop = createRelayLoop(h.callbacks, { batchSize: 50, concurrency: 8, pollIntervalMs: 5, shutdownTimeoutMs: 5000 });
    loop.start();
    await waitFor("all completed", () => h.completed.length === 200);
    await loop.stop();
    expect([...h.completed].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(h.maxInFlight).toBeLessThanOrEqual(8);
    expect(h.maxInFlight).toBeGreaterThan(1);
  });

  it("keeps results when a completion write fails, and writes them on retry", async () => {
    const h = harness(10, { failCompletes: 3 });
    const loop = createRelayLoop(h.callbacks, { batchSize: 10, concurrency: 10, pollIntervalMs: 5, shutdownTimeoutMs: 5000 });
    loop.start();
    await waitFor("all completed", () => h.completed.length === 10);
    await loop.stop();
    expect(h.errors).toEqual(["complete: database blinked", "complete: database blinked", "complete: database blinked"]);
    expect(loop.held).toBe(0);
  });

  it("retries a failed completion write within seconds, not after the poll backstop (a long OUTBOUND_POLL_INTERVAL_MS)", async () => {
    // The poll is the backstop for a missed wake-up and may be a minute; a write that failed
    // because the database blinked holds the attempts' outcomes (and their endpoint's in-flight
    // slots in the database) until it succeeds, so it retries on its own short backoff.
    const h = harness(10, { failCompletes: 3 });
    const loop = createRelayLoop(h.callbacks, { batchSize: 10, concurrency: 10, pollIntervalMs: 60_000, shutdownTimeoutMs: 5000 });
    loop.start();
    await waitFor("all completed after three failed writes", () => h.completed.length === 10, 10_000);
    expect(h.errors).toHaveLength(3);
    await loop.stop();
  }, 20_000);

  it("retries a failed claim within seconds, not after the poll backstop: the work that woke it is still due", async () => {
    const h = harness(10);
    let failClaims = 2;
    const claim = h.callbacks.claim;
    h.callbacks.claim = async (limit: number) => {
      if (failClaims > 0) { failClaims--; throw new Error("connection refused"); }
      return claim(limit);
    };
    const loop = createRelayLoop(h.callbacks, { batchSize: 10, concurrency: 10, pollIntervalMs: 60_000, shutdownTimeoutMs: 5000, claimers: 1 });
    loop.start();
    await waitFor("all completed after two failed claims", () => h.completed.length === 10, 10_000);
    expect(h.errors).toEqual(["claim: connection refused", "claim: connection refused"]);
    await loop.stop();
  }, 20_000);

  it("stop: releases items claimed after stopping, finishes and completes those in flight", async () => {
    const h = harness(30, { slow: 50 });
    let openClaims!: () => void;
    let claims = 0;
    const claim = h.callbacks.claim;
    // The second claim is held open until the loop has been told to stop.
    h.callbacks.claim = async (limit: number) => {
      if (++claims === 2) await new Promise<void>((r) => { openClaims = r; });
      return claim(limit);
    };
    const loop = createRelayLoop(h.callbacks, { batchSize: 5, concurrency: 10, pollIntervalMs: 5, shutdownTimeoutMs: 5000 });
    loop.start();
    // Claims overlap: wait until the first batch is held (in flight) and the second claim is open.
    await waitFor("the second claim under way", () => claims === 2 && openClaims !== undefined && loop.held === 5);
    const stopping = loop.stop();
    openClaims();
    await stopping;
    expect(h.completed).toHaveLength(5); // the first batch, in flight when stop was called
    expect(h.released).toHaveLength(5); // the batch claimed after stop: never started, given back
    expect(loop.held).toBe(0);
    expect(h.completed.length + h.released.length + h.queue.length).toBe(30);
  });

  it("stop gives up after shutdownTimeoutMs when completions keep failing (leases then expire)", async () => {
    const h = harness(3, { failCompletes: Number.POSITIVE_INFINITY });
    const loop = createRelayLoop(h.callbacks, { batchSize: 3, concurrency: 3, pollIntervalMs: 5, shutdownTimeoutMs: 200 });
    loop.start();
    await waitFor("a failed completion", () => h.errors.length > 0);
    await loop.stop(); // resolves: does not hang on the database
    expect(h.completed).toEqual([]);
    expect(loop.held).toBe(3);
  });

  it("holds up to `concurrency` but processes at most `processConcurrency` at once", async () => {
    const h = harness(120, { slow: 5 });
    const loop = createRelayLoop(h.callbacks, { batchSize: 40, concurrency: 40, processConcurrency: 4, pollIntervalMs: 5, shutdownTimeoutMs: 5000 });
    h.watch(loop);
    loop.start();
    await waitFor("all completed", () => h.completed.length === 120);
    await loop.stop();
    expect(h.maxInFlight).toBeLessThanOrEqual(4);
    expect(h.maxHeld).toBeGreaterThan(4); // the others were held, waiting for a turn
    expect(h.maxHeld).toBeLessThanOrEqual(40);
    expect([...h.completed].sort((a, b) => a - b)).toEqual(Array.from({ length: 120 }, (_, i) => i));
  });

  it("runs at most `completionWriters` completion writes at once, and more than one when allowed", async () => {
    const h = harness(200);
    let writing = 0;
    let maxWriting = 0;
    const complete = h.callbacks.complete;
    h.callbacks.complete = async (results: number[]) => {
      writing++;
      maxWriting = Math.max(maxWriting, writing);
      await new Promise((r) => setTimeout(r, 10)); // a slow database write
      writing--;
      return complete(results);
    };
    const loop = createRelayLoop(h.callbacks, { batchSize: 50, concurrency: 50, completionWriters: 3, completionBatch: 5, pollIntervalMs: 5, shutdownTimeoutMs: 5000 });
    loop.start();
    await waitFor("all completed", () => h.completed.length === 200);
    await loop.stop();
    expect(maxWriting).toBeLessThanOrEqual(3);
    expect(maxWriting).toBeGreaterThan(1);
    expect([...h.completed].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it("writes at once when no write is running, and starts another only for `completionBatch` results", async () => {
    const h = harness(300);
    const batches: number[] = [];
    let writing = 0;
    let smallParallel = 0;
    const complete = h.callbacks.complete;
    h.callbacks.complete = async (results: number[]) => {
      if (writing > 0 && results.length < 40) smallParallel++;
      writing++;
      batches.push(results.length);
      await new Promise((r) => setTimeout(r, 10));
      writing--;
      return complete(results);
    };
    const loop = createRelayLoop(h.callbacks, { batchSize: 100, concurrency: 100, completionWriters: 3, completionBatch: 40, pollIntervalMs: 5, shutdownTimeoutMs: 5000 });
    loop.start();
    await waitFor("all completed", () => h.completed.length === 300);
    await loop.stop();
    expect(smallParallel).toBe(0);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(300);
    expect(Math.max(...batches)).toBeGreaterThanOrEqual(40);
  });

  it("stop gives back items still waiting for a processing turn, and completes those started", async () => {
    const h = harness(20, { slow: 100 });
    const loop = createRelayLoop(h.callbacks, { batchSize: 20, concurrency: 20, processConcurrency: 2, pollIntervalMs: 5, shutdownTimeoutMs: 5000 });
    loop.start();
    await waitFor("two started", () => h.maxInFlight === 2);
    await loop.stop();
    expect(h.completed).toHaveLength(2);
    expect(h.released).toHaveLength(18);
    expect(loop.held).toBe(0);
  });

  it("wakes at once on wake() instead of waiting for the poll", async () => {
    const h = harness(0);
    const loop = createRelayLoop(h.callbacks, { batchSize: 5, concurrency: 5, pollIntervalMs: 60_000, shutdownTimeoutMs: 1000 });
    loop.start();
    await new Promise((r) => setTimeout(r, 20));
    h.queue.push(1, 2, 3);
    loop.wake();
    await waitFor("woken and completed", () => h.completed.length === 3, 5000);
    await loop.stop();
  });

  it("runs up to `claimers` claims at once, reserving their slots so the held items never exceed `concurrency`", async () => {
    const h = harness(400, { slow: 2 });
    let claiming = 0;
    let maxClaiming = 0;
    const claim = h.callbacks.claim;
    h.callbacks.claim = async (limit: number) => {
      claiming++;
      maxClaiming = Math.max(maxClaiming, claiming);
      await new Promise((r) => setTimeout(r, 3)); // a claim's round trip
      claiming--;
      const items = await claim(limit);
      return items;
    };
    const loop = createRelayLoop(h.callbacks, { batchSize: 10, concurrency: 40, pollIntervalMs: 5, shutdownTimeoutMs: 5000, claimers: 3 });
    h.watch(loop);
    loop.start();
    await waitFor("all completed", () => h.completed.length === 400);
    await loop.stop();
    expect(maxClaiming).toBe(3);
    expect(h.maxHeld).toBeLessThanOrEqual(40);
    expect(new Set(h.completed).size).toBe(400);
  });

  it("a wake-up that arrives while a claim runs is not lost when that claim finds nothing: it claims again (the claim's snapshot predates the NOTIFY's row)", async () => {
    // Seen in test/faults/databaseOutage.test.ts: LISTEN came back, its "maybe missed" wake-up
    // started a claim, an event committed while that claim ran; the claim (its snapshot older than
    // the event) found nothing, and the event's NOTIFY was taken for that claim's: the loop slept
    // for the whole poll backstop.
    const h = harness(0);
    let claims = 0;
    let claimRunning!: () => void;
    const running = new Promise<void>((r) => { claimRunning = r; });
    let finishClaim!: () => void;
    const finish = new Promise<void>((r) => { finishClaim = r; });
    const claim = h.callbacks.claim;
    h.callbacks.claim = async (limit: number) => {
      claims++;
      if (claims === 1) {
        const snapshot = claim(limit); // what the claim's statement sees: taken before the event
        claimRunning();
        await finish;
        return snapshot;
      }
      return claim(limit);
    };
    const loop = createRelayLoop(h.callbacks, { batchSize: 5, concurrency: 5, pollIntervalMs: 3_600_000, shutdownTimeoutMs: 1000, claimers: 1 });
    loop.start();
    await running;
    h.queue.push(7); // an event commits while the claim runs
    loop.wake(); // its NOTIFY
    finishClaim();
    await waitFor("the event claimed and completed without waiting for the poll", () => h.completed.includes(7), 10_000);
    expect(claims).toBeGreaterThanOrEqual(2);
    await loop.stop();
  }, 20_000);

  it("a wake-up ends the idleness an earlier empty claim set, even while another claim runs", async () => {
    // Two claims at once: the first finds nothing (the loop is idle), the second is slow; a NOTIFY
    // comes meanwhile and must not be spent on a sleep that the old idleness then repeats.
    const h = harness(0);
    let claims = 0;
    let slowRunning!: () => void;
    const slow = new Promise<void>((r) => { slowRunning = r; });
    let finishSlow!: () => void;
    const finish = new Promise<void>((r) => { finishSlow = r; });
    const claim = h.callbacks.claim;
    h.callbacks.claim = async (limit: number) => {
      claims++;
      if (claims === 1) {
        slowRunning();
        await finish;
        return [];
      }
      return claim(limit);
    };
    const loop = createRelayLoop(h.callbacks, { batchSize: 5, concurrency: 10, pollIntervalMs: 3_600_000, shutdownTimeoutMs: 1000, claimers: 2 });
    loop.start();
    await slow;
    await waitFor("the second claim found nothing", () => claims >= 2, 5_000);
    h.queue.push(9);
    loop.wake();
    await new Promise((r) => setTimeout(r, 20));
    finishSlow();
    await waitFor("the event claimed and completed without waiting for the poll", () => h.completed.includes(9), 10_000);
    await loop.stop();
  }, 20_000);

  it("after a claim that finds nothing, waits for the poll (or a wake-up) instead of claiming again at once", async () => {
    const h = harness(0);
    let claims = 0;
    const claim = h.callbacks.claim;
    h.callbacks.claim = (limit: number) => { claims++; return claim(limit); };
    const loop = createRelayLoop(h.callbacks, { batchSize: 5, concurrency: 5, pollIntervalMs: 60_000, shutdownTimeoutMs: 1000 });
    loop.start();
    await new Promise((r) => setTimeout(r, 100));
    expect(claims).toBe(1);
    await loop.stop();
  });
});
