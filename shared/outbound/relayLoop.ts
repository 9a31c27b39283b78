/**
 * The relay's loop, with no SQL and no HTTP in it: it is driven by callbacks (claim, process,
 * complete, release), so it can be tested and reused without a database.
 *
 * Flow control: `held` counts items claimed and not yet completed in the store (in flight or
 * waiting for the completion write). It never exceeds `concurrency`, so a crash loses at most
 * `concurrency` leases, which bounds duplicates per crash. Completions are written in batches, by
 * up to `completionWriters` writes at once: each takes every result gathered so far, and while all
 * are busy, finished items gather for the next. One write at a time left the relay waiting on each
 * batch's round trips and commit flush while its results held slots HTTP could have used; two or
 * three writes overlap those waits (a second write starts only for a batch worth it: see `flush`).
 * Up to `claimers` claims run at once too, their slots reserved. Concurrent writes are safe: each
 * delivery update is token-guarded and the batches are disjoint.
 *
 * Turns: with `keyOf`, held items wait per group (the relay's subscriptions) and processing turns go
 * round the groups, each capped by `turnsFor(group)`, so a group whose items hang holds at most its
 * cap of turns while the others run.
 */

import { performance } from "node:perf_hooks";

/** What `process` returns for an item it did not do: the loop releases it. */
export const GIVE_BACK: unique symbol = Symbol("give back");

export interface RelayLoopCallbacks<C, R> {
  /** Claims up to `limit` items (may return fewer, or none). */
  claim(limit: number): Promise<C[]>;
  /**
   * Does the work of one item; must not throw (turn failures into results). Resolving to
   * GIVE_BACK releases the item unprocessed (it was not done: e.g. its start time passed).
   */
  process(item: C): Promise<R | typeof GIVE_BACK>;
  /** Persists finished items; throws to have the same batch retried. */
  complete(results: R[]): Promise<void>;
  /** Gives back items claimed but not started (shutdown). */
  release(items: C[]): Promise<void>;
  /** Reports an error the loop recovered from. */
  onError(error: unknown, stage: "claim" | "complete" | "release"): void;
}

export interface RelayLoopOptions<C = unknown> {
  /** Most items claimed in one query. */
  batchSize: number;
  /** Most items held at once (in flight plus awaiting the completion write). */
  concurrency: number;
  /** Longest sleep when there is nothing to do: the backstop when a wake-up is missed. */
  pollIntervalMs: number;
  /** How long `stop` waits for in-flight work before giving up (leases then expire). */
  shutdownTimeoutMs: number;
  /** Most completion writes running at once. Default: 2. */
  completionWriters?: number;
  /**
   * Most items being processed at once (HTTP attempts); the other held items wait, unstarted, for
   * a turn. Default: `concurrency`. Kept at the transport's connections, attempts do not queue in
   * the connection pool, where their deadline would run while they wait.
   */
  processConcurrency?: number;
  /** Fewest gathered results for which a second (third…) completion write starts. Default: 100. */
  completionBatch?: number;
  /** Most claims running at once. Default: 2. */
  claimers?: number;
  /**
   * Longest the loop waits for half a batch of free slots while some are free, before it claims
   * what is free. Default: 25 ms. Without it, slots held by attempts that hang (100 endpoints
   * hanging until their timeout held 800 of 1 024) kept every claim waiting for those timeouts,
   * and a healthy endpoint's new delivery waited up to a timeout for its claim (issue 28).
   */
  claimWaitMs?: number;
  /**
   * The group an item belongs to (its subscription). Turns go round the groups with items waiting,
   * one at a time, and a group never has more than `turnsFor(group)` items processing: a group
   * whose items hang holds at most that many turns. Default: all items in one group.
   */
  keyOf?: (item: C) => string;
  /** Most items of one group processing at once; read at every turn (it may adapt). Default: no cap. */
  turnsFor?: (key: string) => number;
}

export interface RelayLoop {
  start(): void;
  /** Wakes the loop now (a NOTIFY arrived). */
  wake(): void;
  /** Stops claiming, lets in-flight items finish and be completed; resolves when done or timed out. */
  stop(): Promise<void>;
  /** Items currently held. */
  readonly held: number;
  /** Items of one group held and not finished (waiting for a turn, or processing). */
  unfinished(key: string): number;
  /** The groups with unfinished items. */
  groups(): Set<string>;
}

/** Longest wait between two tries of a failed completion write or claim (it starts at 250 ms and doubles). */
const RETRY_MAX_MS = 5_000;

export function createRelayLoop<C, R>(callbacks: RelayLoopCallbacks<C, R>, options: RelayLoopOptions<C>): RelayLoop {
  let running = false;
  let held = 0;
  let buffer: R[] = [];
  const writes = new Set<Promise<void>>();
  const writers = Math.max(1, options.completionWriters ?? 2);
  let loopDone: Promise<void> = Promise.resolve();
  let wakeUp: (() => void) | null = null;
  let woken = false;
  /** Set when a claim found nothing (and no wake-up came meanwhile): the next one waits for a wake-up or the poll. */
  let idle = false;

  /** Ends the loop's current sleep: something inside the loop freed slots or finished a claim. */
  const nudge = () => {
    woken = true;
    wakeUp?.();
  };
  /**
   * Wake-ups from outside (a NOTIFY, a throttle running out), counted: one ends the loop's idleness,
   * and a claim that finds nothing makes the loop idle only if none arrived while it ran. One that
   * did may be for a row committed after the claim's snapshot was taken, and nothing else will
   * wake the loop for it.
   */
  let notices = 0;
  const wake = () => {
    notices += 1;
    idle = false; // whatever the last empty claim saw, there may be work now
    nudge();
  };
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || !running) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeUp = null;
        resolve();
      }
      wakeUp = done;
    });

  const write = async (batch: R[]) => {
    for (let failures = 0; ; failures++) {
      try {
        await callbacks.complete(batch);
        break;
      } catch (error) {
        callbacks.onError(error, "complete");
        // Keep the results: the outcome of an attempt must not vanish because the database blinked.
        // Retry on a short backoff of its own, not the poll backstop (which may be a minute):
        // until it is written the outcome holds its endpoint's in-flight slots for every relay.
        await new Promise((r) => setTimeout(r, Math.min(options.pollIntervalMs, RETRY_MAX_MS, 250 * 2 ** failures)));
      }
    }
    held -= batch.length;
    nudge();
  };

  const parallelBatch = Math.max(1, options.completionBatch ?? 100);
  /**
   * Starts writes for the gathered results; resolves when those running end. With no write running,
   * whatever has gathered is written at once (a quiet relay completes each attempt promptly). While
   * one runs, another starts only for at least `completionBatch` results: a write costs the
   * database about the same for 10 rows as for 100, so under load results gather into big batches.
   */
  const flush = (): Promise<void> => {
    while (buffer.length > 0 && writes.size < writers && (writes.size === 0 || buffer.length >= parallelBatch)) {
      const batch = buffer;
      buffer = [];
      const written: Promise<void> = write(batch).finally(() => {
        writes.delete(written);
        void flush(); // results that gathered meanwhile
      });
      writes.add(written);
    }
    return Promise.all(writes).then(() => undefined);
  };

  const processLimit = Math.max(1, Math.min(options.processConcurrency ?? options.concurrency, options.concurrency));
  let processing = 0;
  const keyOf = options.keyOf ?? (() => "");
  const turnsFor = options.turnsFor ?? (() => Infinity);
  /**
   * Held items not started yet, per group, waiting for a processing turn. The map's order is the
   * turn order: a group that got a turn moves to the back.
   */
  const waiting = new Map<string, C[]>();
  const processingByKey = new Map<string, number>();

  const startWaiting = () => {
    let progressed = true;
    while (processing < processLimit && waiting.size > 0 && progressed) {
      progressed = false;
      for (const [key, items] of waiting) {
        if (processing >= processLimit) break;
        const busy = processingByKey.get(key) ?? 0;
        if (busy >= Math.max(1, turnsFor(key))) continue;
        const item = items.shift()!;
        waiting.delete(key);
        if (items.length > 0) waiting.set(key, items); // to the back of the turn order
        processing += 1;
        processingByKey.set(key, busy + 1);
        progressed = true;
        void run(item).finally(() => {
          processing -= 1;
          const left = (processingByKey.get(key) ?? 1) - 1;
          if (left > 0) processingByKey.set(key, left);
          else processingByKey.delete(key);
          startWaiting();
        });
        break; // the map changed under the iteration: start again from the front
      }
    }
  };

  const run = async (item: C) => {
    let result: R | typeof GIVE_BACK;
    try {
      result = await callbacks.process(item);
    } catch (error) {
      // Broken contract: give the item back rather than hold its slot (and lease) forever.
      callbacks.onError(error, "release");
      await callbacks.release([item]).catch((e) => callbacks.onError(e, "release"));
      held -= 1;
      nudge();
      return;
    }
    if (result === GIVE_BACK) {
      await callbacks.release([item]).catch((e) => callbacks.onError(e, "release"));
      held -= 1;
      nudge();
      return;
    }
    buffer.push(result);
    void flush();
  };

  // Claims wait for half a batch of free slots: a claim costs the database nearly the same for 60
  // rows as for 125, and the held items waiting for an HTTP turn keep the connections busy meanwhile.
  const lowWater = Math.max(1, Math.floor(Math.min(options.batchSize, options.concurrency) / 2));
  const claimers = Math.max(1, options.claimers ?? 2);
  /** Claims under way, and the slots they may fill (reserved so two claims never overfill). */
  const claims = new Set<Promise<void>>();
  let reserved = 0;
  const claimWaitMs = Math.max(1, options.claimWaitMs ?? 25);
  /** When the last claim started (performance.now()). */
  let lastClaimAt = -Infinity;

  let claimFailures = 0;
  const claimInto = async (limit: number) => {
    const noticesBefore = notices;
    let items: C[];
    try {
      items = await callbacks.claim(limit);
    } catch (error) {
      callbacks.onError(error, "claim");
      // Not "nothing to do": whatever woke this claim is still due and nothing may wake the loop
      // again (a NOTIFY already spent, the poll a minute away). Hold this claim's place for a
      // short backoff, then the loop claims again.
      claimFailures += 1;
      await new Promise((r) => setTimeout(r, Math.min(options.pollIntervalMs, RETRY_MAX_MS, 250 * 2 ** (claimFailures - 1))));
      return;
    }
    claimFailures = 0;
    if (!running) {
      // Stopped while the claim ran: these were never started, give them back.
      await callbacks.release(items).catch((error) => callbacks.onError(error, "release"));
      return;
    }
    if (items.length === 0) {
      if (notices === noticesBefore) idle = true;
      return;
    }
    held += items.length;
    for (const item of items) {
      const key = keyOf(item);
      const queue = waiting.get(key);
      if (queue) queue.push(item);
      else waiting.set(key, [item]);
    }
    startWaiting();
  };

  const loop = async () => {
    while (running) {
      woken = false;
      const free = options.concurrency - held - reserved;
      // Wait for a useful number of free slots: many one-row claims would cost more than they bring,
      // but not for ever: past claimWaitMs, what is free is claimed (at most one claim per
      // claimWaitMs that way), so slots held by attempts that hang never keep the others waiting.
      // Up to `claimers` claims run at once: a claim's round trips and commit then overlap another's.
      const short = free < lowWater && held + reserved > 0;
      const waited = performance.now() - lastClaimAt;
      if (claims.size >= claimers || (short && (free <= 0 || waited < claimWaitMs)) || (idle && claims.size > 0)) {
        await sleep(short && free > 0 && claims.size < claimers && !idle ? Math.min(options.pollIntervalMs, claimWaitMs - waited) : options.pollIntervalMs);
        continue;
      }
      if (idle) {
        idle = false;
        await sleep(options.pollIntervalMs);
        if (!running) break;
        continue;
      }
      const limit = Math.min(options.batchSize, free);
      lastClaimAt = performance.now();
      reserved += limit;
      const claimed: Promise<void> = claimInto(limit).finally(() => {
        reserved -= limit;
        claims.delete(claimed);
        nudge();
      });
      claims.add(claimed);
    }
    await Promise.all(claims);
  };

  return {
    get held() {
      return held;
    },
    unfinished(key) {
      return (waiting.get(key)?.length ?? 0) + (processingByKey.get(key) ?? 0);
    },
    groups: () => new Set([...waiting.keys(), ...processingByKey.keys()]),
    start() {
      if (running) return;
      running = true;
      loopDone = loop();
    },
    wake,
    async stop() {
      running = false;
      nudge();
      await loopDone;
      // Items still waiting for a turn were never started: give them back rather than send them now.
      const unstarted = [...waiting.values()].flat();
      waiting.clear();
      if (unstarted.length > 0) {
        await callbacks.release(unstarted).catch((error) => callbacks.onError(error, "release"));
        held -= unstarted.length;
      }
      const deadline = Date.now() + options.shutdownTimeoutMs;
      while (held > 0 && Date.now() < deadline) {
        // A flush retries forever while the database is down: bound the wait by the deadline.
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<void>((r) => { timer = setTimeout(r, Math.max(0, Math.min(50, deadline - Date.now()))); });
        // The short pause after a flush yields to timers and I/O: in-flight attempts must progress.
        await Promise.race([flush().then(() => new Promise((r) => setTimeout(r, 5))), timeout]);
        clearTimeout(timer);
      }
    },
  };
}
