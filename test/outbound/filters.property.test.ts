/**
 * Issue 30, Must-show 2: for random events and random filters, a delivery exists exactly when a
 * reference evaluator says the filter matches, on both backends. The reference below is written
 * from docs/filters.md alone (not from shared/outbound/filters.ts): it walks the body with its own
 * path lookup and compares with its own rules. Events go through every enqueue shape (one event,
 * a batch, with and without ordering keys, to ordered and unordered subscriptions), since each
 * shape has its own fan-out statement. The core's JavaScript evaluator (`matchesFilter`) is held to
 * the same reference.
 */
import fc from "fast-check";
import { afterEach, expect, it } from "vitest";
import { createSubscription, enqueue, enqueueMany } from "../../shared/outbound/index.js";
import { matchesFilter } from "../../shared/outbound/filters.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound } from "./support/receiver.js";

// ---- The reference evaluator (docs/filters.md) -------------------------------------------------

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const ABSENT = undefined;

/** The value at a dot path, or ABSENT when a segment is missing or crosses a non-object. */
function lookup(body: Json, path: string): Json | undefined {
  return path.split(".").reduce<Json | undefined>((node, key) => {
    if (node === ABSENT || node === null || typeof node !== "object" || Array.isArray(node)) return ABSENT;
    return Object.hasOwn(node, key) ? node[key] : ABSENT;
  }, body);
}

/** docs: "equal: same JSON type and same value; objects and arrays are never equal to an operand". */
function same(value: Json | undefined, operand: Json): boolean {
  if (value === ABSENT || value === null || operand === null) return value === operand;
  if (typeof value === "object") return false;
  return typeof value === typeof operand && value === operand;
}

/** docs: "numbers with numbers, strings with strings by Unicode code point; anything else is false". */
function order(value: Json | undefined, operand: number | string): number | null {
  if (typeof value === "number" && typeof operand === "number") return Math.sign(value - operand);
  if (typeof value !== "string" || typeof operand !== "string") return null;
  const a = Array.from(value, (c) => c.codePointAt(0)!);
  const b = Array.from(operand, (c) => c.codePointAt(0)!);
  for (let i = 0; ; i++) {
    if (i === a.length || i === b.length) return Math.sign(a.length - b.length);
    if (a[i] !== b[i]) return Math.sign(a[i]! - b[i]!);
  }
}

function operatorHolds(value: Json | undefined, op: string, operand: Json): boolean {
  const o = (x: number | string) => order(value, x);
  switch (op) {
    case "$eq": return same(value, operand);
    case "$neq": return !same(value, operand);
    case "$in": return (operand as Json[]).some((x) => same(value, x));
    case "$nin": return !(operand as Json[]).some((x) => same(value, x));
    case "$gt": { const r = o(operand as number); return r !== null && r > 0; }
    case "$gte": { const r = o(operand as number); return r !== null && r >= 0; }
    case "$lt": { const r = o(operand as number); return r !== null && r < 0; }
    case "$lte": { const r = o(operand as number); return r !== null && r <= 0; }
    case "$exists": return operand === (value !== ABSENT);
    case "$prefix": return typeof value === "string" && value.slice(0, (operand as string).length) === operand;
    case "$contains":
      if (Array.isArray(value)) return value.some((x) => same(x, operand));
      return typeof value === "string" && typeof operand === "string" && value.indexOf(operand) >= 0;
    default: throw new Error(`reference: unknown operator ${op}`);
  }
}

function reference(filter: Record<string, Json>, body: Json): boolean {
  return Object.keys(filter).every((key) => {
    const v = filter[key]!;
    if (key === "$and") return (v as Record<string, Json>[]).every((f) => reference(f, body));
    if (key === "$or") return (v as Record<string, Json>[]).some((f) => reference(f, body));
    if (key === "$not") return !reference(v as Record<string, Json>, body);
    const value = lookup(body, key);
    const isOperators = v !== null && typeof v === "object" && !Array.isArray(v);
    return isOperators ? Object.keys(v).every((op) => operatorHolds(value, op, (v as Record<string, Json>)[op]!)) : same(value, v);
  });
}

// ---- Generators -----------------------------------------------------------------------------------

// Few distinct values, so filters and events meet often (otherwise nearly nothing matches).
const str = fc.constantFrom("", "a", "ab", "b", "B", "a.b", "x%_", "é", "😀");
const num = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(0, 2, 100.5) }, { weight: 1, arbitrary: fc.constantFrom(-1.5, 1e21) });
const scalar: fc.Arbitrary<Json> = fc.oneof({ weight: 2, arbitrary: str }, { weight: 3, arbitrary: num }, { weight: 1, arbitrary: fc.boolean() }, { weight: 1, arbitrary: fc.constant(null) });
const value: fc.Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: scalar },
  { weight: 2, arbitrary: fc.array(scalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom("a", "b"), scalar, { maxKeys: 2 }) },
);
const dataOf = fc.record({ a: value, b: value, c: fc.oneof(value, fc.record({ d: value }, { requiredKeys: [] })) }, { requiredKeys: [] });
const TYPES = ["order.paid", "order.refunded", "invoice.sent"];
const PATHS = ["data.a", "data.a", "data.a", "data.b", "data.b", "data.c", "data.c.d", "data.missing", "data"];

const operatorCondition: fc.Arbitrary<Record<string, Json>> = fc.oneof(
  fc.record({ $eq: scalar }), fc.record({ $neq: scalar }),
  fc.record({ $in: fc.array(scalar, { minLength: 1, maxLength: 3 }) }), fc.record({ $nin: fc.array(scalar, { minLength: 1, maxLength: 3 }) }),
  fc.record({ $gt: fc.oneof(num, str) }), fc.record({ $gte: fc.oneof(num, str) }), fc.record({ $lt: fc.oneof(num, str) }), fc.record({ $lte: fc.oneof(num, str) }),
  fc.record({ $exists: fc.boolean() }), fc.record({ $prefix: str }), fc.record({ $contains: scalar }),
  // Two operators on one field: both must hold.
  fc.record({ $gte: num, $lt: num }),
);
const typeCondition: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(...TYPES), fc.record({ $prefix: fc.constantFrom("order.", "inv", "order.paid.") }),
  fc.record({ $in: fc.subarray(TYPES, { minLength: 1 }) }), fc.record({ $neq: fc.constantFrom(...TYPES) }),
);
const fieldFilter: fc.Arbitrary<Record<string, Json>> = fc.oneof(
  fc.tuple(fc.constantFrom(...PATHS), fc.oneof(scalar, operatorCondition)).map(([path, cond]) => ({ [path]: cond })),
  typeCondition.map((cond) => ({ type: cond })),
);
const filterOf: fc.Arbitrary<Record<string, Json>> = fc.letrec<{ f: Record<string, Json> }>((tie) => ({
  f: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fieldFilter,
    fc.tuple(fieldFilter, fieldFilter).map(([x, y]) => ({ ...x, ...y })),
    fc.array(tie("f"), { minLength: 1, maxLength: 3 }).map((fs) => ({ $and: fs })),
    fc.array(tie("f"), { minLength: 1, maxLength: 3 }).map((fs) => ({ $or: fs })),
    tie("f").map((f) => ({ $not: f })),
  ),
})).f;

const eventOf = fc.record({ type: fc.constantFrom(...TYPES), data: dataOf, keyed: fc.boolean() });

// ---- The property ---------------------------------------------------------------------------------

describeEachBackend("subscription filters against a reference evaluator", (ctx) => {
  afterEach(() => resetOutbound(ctx.db));

  it("a delivery exists exactly when the reference says the filter matches", async () => {
    let run = 0;
    let matched = 0, unmatched = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ filter: fc.option(filterOf, { freq: 6 }), ordered: fc.boolean() }), { minLength: 1, maxLength: 10 }),
        fc.array(eventOf, { minLength: 1, maxLength: 30 }),
        fc.boolean(),
        async (subs, events, batched) => {
          run++;
          await resetOutbound(ctx.db);
          const created = [];
          for (const s of subs) {
            created.push({ ...s, id: (await createSubscription(ctx.db, { url: "https://example.com/hooks", eventTypes: ["*"], ordered: s.ordered, ...(s.filter ? { filter: s.filter } : {}) })).id });
          }
          const input = events.map((e, i) => ({ id: `r${run}_${i}`, type: e.type, data: e.data, ...(e.keyed ? { orderingKey: "k" } : {}) }));
          const results = batched
            ? await ctx.db.transaction((tx) => enqueueMany(tx, input))
            : await Promise.all(input.map((e) => ctx.db.transaction((tx) => enqueue(tx, e))));
          for (const [i, result] of results.entries()) {
            const { rows } = await ctx.db.query<{ body: string }>("SELECT body FROM outbound_events WHERE id = $1", [result.eventId]);
            const body = JSON.parse(rows[0]!.body) as Json;
            const expected = created.filter((s) => s.filter === null || reference(s.filter, body)).map((s) => s.id).sort();
            const got = result.deliveries.map((d) => d.subscriptionId).sort();
            matched += expected.length;
            unmatched += created.length - expected.length;
            expect(got, JSON.stringify({ event: input[i], filters: created.map((s) => s.filter) })).toEqual(expected);
            // The JavaScript evaluator (inbound forwarding, test operations) agrees too.
            for (const s of created) if (s.filter) expect(matchesFilter(s.filter, body), JSON.stringify({ body, filter: s.filter })).toBe(reference(s.filter, body));
          }
          // What enqueue returned is what the table holds.
          const { rows } = await ctx.db.query<{ n: string }>("SELECT count(*) AS n FROM outbound_deliveries");
          expect(Number(rows[0]!.n)).toBe(results.reduce((n, r) => n + r.deliveries.length, 0));
        },
      ),
      { numRuns: 50 },
    );
    // The generators must exercise both outcomes, or the property says little.
    expect(matched).toBeGreaterThan(20);
    expect(unmatched).toBeGreaterThan(20);
  }, 240_000);
});
