/**
 * Issue 15, Must-show 4: a fast-check property of ordered delivery with random failures, retries,
 * relay crashes (leases running out), relays stopped mid-attempt (answered, never written, written
 * late), replays and skips, several relays on one database (on PostgreSQL, bursts of them racing
 * on separate connections). Per key:
 *  - never two attempts of one key in flight at once (checked at every claim, counted, not timed);
 *  - first successful receipts arrive in the key's order: enqueue order, a dead letter replayed
 *    after it was skipped counting as enqueued at its replay (docs/outbound.md#ordered-delivery);
 *  - at the end, once every dead letter is replayed and everything answered, all are received.
 * The relays are the relay's own SQL (claim, complete) driven by the test (./support/orderingDriver.ts):
 * the property is about what the database lets through, whoever asks.
 */
import fc from "fast-check";
import { afterEach, expect, it } from "vitest";
import { createSubscription, enqueueMany, listDeadLetters, replayDeadLetter } from "../../shared/outbound/index.js";
import { listOrderingKeys, skipOrderingKey } from "../../shared/outbound/ordering.js";
import type { ClaimedDelivery, Completion } from "../../shared/outbound/types.js";
import { describeEachBackend } from "../support/databases.js";
import { claim, complete, completion, expireLeases, resetOrdering, timePasses, type Outcome } from "./support/orderingDriver.js";

const KEYS = ["a", "b", "c"] as const;
const RELAYS = 3;

type Step =
  | { t: "enqueue"; keys: (typeof KEYS)[number][] }
  | { t: "claim"; r: number; limit: number }
  | { t: "finish"; r: number; outcomes: Outcome[]; later: boolean }
  | { t: "crash"; r: number }
  | { t: "stall"; r: number; ok: boolean }
  | { t: "late" }
  | { t: "time" }
  | { t: "replay"; pick: number }
  | { t: "skip"; pick: number }
  | { t: "burst"; steps: Step[] };

const relay = fc.integer({ min: 0, max: RELAYS - 1 });
const simple: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ t: fc.constant("enqueue" as const), keys: fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 5 }) }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant("claim" as const), r: relay, limit: fc.integer({ min: 1, max: 10 }) }) },
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant("finish" as const), r: relay, later: fc.boolean(),
      outcomes: fc.array(fc.constantFrom<Outcome>("ok", "ok", "ok", "retry", "dead"), { minLength: 1, maxLength: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("crash" as const), r: relay }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("stall" as const), r: relay, ok: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ t: "late" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "time" as const }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("replay" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("skip" as const), pick: fc.nat() }) },
);
/**
 * Claims, completions and at most one enqueue at once: on PostgreSQL they race on separate
 * connections (an enqueue racing the completion that moves its key on, among others). One enqueue
 * only, so the model's order of places is the database's.
 */
const burst: fc.Arbitrary<Step> = fc.record({
  t: fc.constant("burst" as const),
  steps: fc.tuple(
    fc.array(fc.oneof(
      fc.record({ t: fc.constant("claim" as const), r: relay, limit: fc.integer({ min: 1, max: 10 }) }),
      fc.record({ t: fc.constant("finish" as const), r: relay, later: fc.boolean(), outcomes: fc.array(fc.constantFrom<Outcome>("ok", "ok", "retry", "dead"), { minLength: 1, maxLength: 3 }) }),
    ), { minLength: 2, maxLength: 5 }),
    fc.option(fc.record({ t: fc.constant("enqueue" as const), keys: fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 3 }) }), { nil: undefined }),
  ).map(([steps, enqueue]): Step[] => (enqueue ? [enqueue, ...steps] : steps)),
});

describeEachBackend("ordered delivery, property", (ctx) => {
  afterEach(() => resetOrdering(ctx.db));

  async function run(steps: Step[], withBursts: boolean): Promise<void> {
    await resetOrdering(ctx.db);
    const sub = await createSubscription(ctx.db, { url: "https://example.com/o", eventTypes: ["*"], ordered: true });
    const keyOf = new Map<string, string>();
    /** The model's order per key: the place each delivery holds (enqueue order; a replay after a skip: a new place at the end). */
    const place = new Map<string, number>();
    const nextPlace = new Map<string, number>(KEYS.map((k) => [k, 0]));
    const skipped = new Set<string>();
    const held: ClaimedDelivery[][] = Array.from({ length: RELAYS }, () => []);
    /** Attempts answered whose relay stopped before writing them: written by `late`. */
    const late: Completion[] = [];
    const receipts = new Map<string, string[]>(KEYS.map((k) => [k, []]));
    const received = new Set<string>();
    let events = 0;
    const violations: string[] = [];

    const live = () => held.flat();
    const receive = (d: ClaimedDelivery) => {
      if (received.has(d.id)) return; // a duplicate (sent again after a stall): not a first receipt
      received.add(d.id);
      receipts.get(keyOf.get(d.id)!)!.push(d.id);
    };
    const place1 = (key: string, id: string) => {
      const n = nextPlace.get(key)!;
      nextPlace.set(key, n + 1);
      place.set(id, n);
    };

    const replay = async (id: string) => {
      await replayDeadLetter(ctx.db, id);
      // Skipped before, it re-joins its key at the end (unless it had reached the receiver already,
      // from a relay that stalled after the answer: that first receipt keeps its place).
      if (skipped.delete(id) && !received.has(id)) place1(keyOf.get(id)!, id);
    };

    const exec = async (step: Step): Promise<void> => {
      switch (step.t) {
        case "enqueue": {
          const batch = step.keys.map((key) => ({ id: `e${events++}`, type: "t.x", data: {}, orderingKey: key }));
          for (const e of batch) {
            keyOf.set(`${e.id}:${sub.id}`, e.orderingKey);
            place1(e.orderingKey, `${e.id}:${sub.id}`);
          }
          await enqueueMany(ctx.db, batch);
          return;
        }
        case "claim": {
          const got = await claim(ctx.db, step.limit);
          for (const d of got) {
            const key = keyOf.get(d.id)!;
            const other = live().find((h) => keyOf.get(h.id) === key);
            if (other) violations.push(`${d.id} claimed while ${other.id} of key ${key} is in flight`);
            held[step.r]!.push(d);
          }
          return;
        }
        case "finish": {
          const mine = held[step.r]!.splice(0);
          if (mine.length === 0) return;
          const done = mine.map((d, i) => completion(d, step.outcomes[i % step.outcomes.length]!, step.later ? 3600 : 0));
          // The receiver answered while the attempt was in flight; then the relay writes.
          for (const c of done) if (c.decision.status === "delivered") receive(c.delivery);
          await complete(ctx.db, done);
          return;
        }
        case "crash": {
          // Died mid-attempt: its connections close with it; its leases run out.
          const mine = held[step.r]!.splice(0);
          await expireLeases(ctx.db, mine);
          return;
        }
        case "stall": {
          // Answered, then stopped before writing (frozen past its lease): written by `late`, if ever.
          const mine = held[step.r]!.splice(0);
          for (const d of mine) {
            const c = completion(d, step.ok ? "ok" : "retry");
            if (step.ok) receive(d);
            late.push(c);
          }
          await expireLeases(ctx.db, mine);
          return;
        }
        case "late":
          await complete(ctx.db, late.splice(0));
          return;
        case "time":
          await timePasses(ctx.db);
          return;
        case "replay": {
          const dead = await listDeadLetters(ctx.db, { subscriptionId: sub.id, limit: 1000 });
          if (dead.length === 0) return;
          await replay(dead[step.pick % dead.length]!.id);
          return;
        }
        case "skip": {
          const blocked = await listOrderingKeys(ctx.db, sub.id, { blocked: true });
          if (blocked.length === 0) return;
          const { skipped: id } = await skipOrderingKey(ctx.db, sub.id, blocked[step.pick % blocked.length]!.orderingKey);
          if (id) skipped.add(id);
          return;
        }
        case "burst":
          await Promise.all(step.steps.map(exec));
          return;
      }
    };

    for (const step of steps) {
      if (step.t === "burst" && !withBursts) continue;
      await exec(step);
    }
    // The end: stalled relays write (or not), every lease runs out, and then every dead letter is
    // replayed and every attempt answered until nothing is left.
    await complete(ctx.db, late.splice(0));
    for (const h of held) await expireLeases(ctx.db, h.splice(0));
    let timePassed = false;
    for (let round = 0; round < 10_000; round++) {
      const got = await claim(ctx.db, 100);
      for (const d of got) {
        const other = got.find((o) => o !== d && keyOf.get(o.id) === keyOf.get(d.id));
        if (other) violations.push(`${d.id} and ${other.id} claimed together`);
        receive(d);
      }
      if (got.length > 0) {
        await complete(ctx.db, got.map((d) => completion(d, "ok")));
        timePassed = false;
        continue;
      }
      if (!timePassed) {
        await timePasses(ctx.db); // retries scheduled later come due; claim again
        timePassed = true;
        continue;
      }
      const dead = await listDeadLetters(ctx.db, { subscriptionId: sub.id, limit: 1000 });
      if (dead.length === 0) {
        // Nothing due, nothing dead: anything still pending is stuck (a key that never moves on).
        const { rows } = await ctx.db.query<{ id: string }>("SELECT id FROM outbound_deliveries WHERE status = 'pending'");
        if (rows.length > 0) violations.push(`stuck: ${rows.map((r) => r.id).join(", ")}`);
        break;
      }
      for (const d of dead) await replay(d.id);
      timePassed = false;
    }
    expect(violations).toEqual([]);
    const { rows } = await ctx.db.query<{ status: string; n: string }>("SELECT status, count(*) AS n FROM outbound_deliveries GROUP BY status");
    expect(rows.map((r) => [r.status, Number(r.n)])).toEqual(events > 0 ? [["delivered", events]] : []);
    expect(received.size).toBe(events);
    for (const key of KEYS) {
      const got = receipts.get(key)!;
      const sorted = [...got].sort((x, y) => place.get(x)! - place.get(y)!);
      expect(got, `first receipts of key ${key}`).toEqual(sorted);
    }
  }

  it("per key: never two in flight, first receipts in order, nothing lost (random failures, retries, crashes, stalls, replays, skips)", async () => {
    const withBursts = ctx.backend === "postgres";
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof({ weight: 6, arbitrary: simple }, { weight: 1, arbitrary: burst }), { minLength: 5, maxLength: 40 }), (steps) => run(steps, withBursts)),
      { numRuns: ctx.backend === "postgres" ? Number(process.env.ORDERING_RUNS ?? 40) : 25 },
    );
  }, 600_000);
});
