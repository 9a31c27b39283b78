/**
 * Content filters: which events of its types a subscription (or an inbound destination) wants,
 * decided on the event's body (`id`, `type`, `timestamp`, `data`). docs/filters.md is the manual.
 *
 *   { "data.amount": { "$gt": 100 }, "data.currency": "EUR", "$or": [{ "type": "order.paid" }, { "data.vip": true }] }
 *
 * A filter is an object whose entries must all hold. An entry is `$and: [filter…]`, `$or:
 * [filter…]`, `$not: filter`, or a dot path (`data.customer.country`) with a condition: a scalar
 * (equality) or an object of operators, all of which must hold. Operands are JSON scalars: no
 * object or array is compared, so every comparison has one obvious meaning.
 *
 * A filter is validated once, when it is stored, and compiled to a PostgreSQL jsonpath predicate
 * that enqueue evaluates inside its statement (`jsonb_path_match`), so a filtered-out event never
 * gets a delivery row, on PostgreSQL and PGlite alike. Every leaf compiles to `exists($ ? (…))` in
 * strict mode: a missing field, a field of another type or an array where a scalar was expected
 * makes the leaf false (never SQL's unknown), so `$not` is the plain complement. `matchesFilter`
 * evaluates the same rules in JavaScript (inbound forwarding, the "test" operations).
 */
import { OutboundValidationError, type Issue } from "./errors.js";

export type Scalar = string | number | boolean | null;
export type Condition = Scalar | Partial<Record<Operator, unknown>>;
export type Filter = { $and?: Filter[]; $or?: Filter[]; $not?: Filter } & { [path: string]: unknown };

export const OPERATORS = ["$eq", "$neq", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists", "$prefix", "$contains"] as const;
export type Operator = (typeof OPERATORS)[number];

/** The fields of the body a path may start with. */
export const FILTER_ROOTS = ["id", "type", "timestamp", "data"] as const;
const SEGMENT = /^[A-Za-z0-9_-]{1,100}$/;
const MAX_DEPTH = 10;
const MAX_LEAVES = 100;
const MAX_LIST = 100;
const MAX_STRING = 1000;
/** Largest filter accepted, as JSON text. */
export const MAX_FILTER_BYTES = 8 * 1024;

/** Why the filter is invalid: every problem, each with its JSON path inside the filter. */
export function filterProblems(filter: unknown): Issue[] {
  const issues: Issue[] = [];
  const text = safeJson(filter);
  if (text === null) return [{ path: "(root)", message: "must be a JSON object" }];
  if (Buffer.byteLength(text, "utf8") > MAX_FILTER_BYTES) return [{ path: "(root)", message: `must be at most ${MAX_FILTER_BYTES} bytes of JSON` }];
  let leaves = 0;
  const at = (path: string, key: string) => (path ? `${path}.${key}` : key);
  const scalarProblem = (v: unknown): string | null => {
    if (v === null || typeof v === "boolean") return null;
    if (typeof v === "number") return Number.isFinite(v) ? null : "must be a finite number";
    if (typeof v === "string") return stringProblem(v);
    return "must be a string, number, boolean or null (objects and arrays are not compared; filter on their fields with a dot path)";
  };
  const visitFilter = (node: unknown, path: string, depth: number) => {
    if (depth > MAX_DEPTH) return issues.push({ path: path || "(root)", message: `nests more than ${MAX_DEPTH} levels of $and/$or/$not` });
    if (!isPlainObject(node)) return issues.push({ path: path || "(root)", message: "must be an object of conditions, e.g. {\"data.amount\": {\"$gt\": 100}}" });
    const entries = Object.entries(node);
    if (entries.length === 0) issues.push({ path: path || "(root)", message: "must have at least one condition (omit the filter to receive every event of the subscribed types)" });
    for (const [key, value] of entries) {
      const here = at(path, key);
      if (key === "$and" || key === "$or") {
        if (!Array.isArray(value) || value.length === 0) issues.push({ path: here, message: "must be a non-empty array of filters" });
        else value.forEach((f, i) => visitFilter(f, `${here}[${i}]`, depth + 1));
      } else if (key === "$not") {
        visitFilter(value, here, depth + 1);
      } else if (key.startsWith("$")) {
        issues.push({ path: here, message: `unknown logical operator ${key}: use $and, $or or $not here, or put ${key} inside a field's condition ({"data.x": {"${key}": …}})` });
      } else {
        const problem = pathProblem(key);
        if (problem) issues.push({ path: here, message: problem });
        visitCondition(value, here);
      }
    }
  };
  const visitCondition = (cond: unknown, path: string) => {
    if (!isPlainObject(cond)) {
      leaves++;
      const problem = scalarProblem(cond);
      if (problem) issues.push({ path, message: problem });
      return;
    }
    const entries = Object.entries(cond);
    if (entries.length === 0) issues.push({ path, message: "must have at least one operator (e.g. {\"$eq\": 1})" });
    for (const [op, operand] of entries) {
      leaves++;
      const here = `${path}.${op}`;
      if (!(OPERATORS as readonly string[]).includes(op)) {
        issues.push({ path: here, message: op.startsWith("$") ? `unknown operator; use one of ${OPERATORS.join(" ")}` : "a condition's keys are operators; to reach a nested field, use a dot path (\"data.customer.country\")" });
        continue;
      }
      const problem = operandProblem(op as Operator, operand, scalarProblem);
      if (problem) issues.push({ path: here, message: problem });
    }
  };
  visitFilter(filter, "", 0);
  if (leaves > MAX_LEAVES) issues.push({ path: "(root)", message: `has ${leaves} conditions, over the limit of ${MAX_LEAVES}` });
  return issues;
}

function operandProblem(op: Operator, operand: unknown, scalarProblem: (v: unknown) => string | null): string | null {
  switch (op) {
    case "$eq": case "$neq": case "$contains":
      return scalarProblem(operand);
    case "$in": case "$nin":
      if (!Array.isArray(operand) || operand.length === 0 || operand.length > MAX_LIST) return `must be an array of 1 to ${MAX_LIST} scalars`;
      for (const [i, v] of operand.entries()) {
        const p = scalarProblem(v);
        if (p) return `[${i}] ${p}`;
      }
      return null;
    case "$gt": case "$gte": case "$lt": case "$lte":
      if (typeof operand === "number") return Number.isFinite(operand) ? null : "must be a finite number";
      if (typeof operand === "string") return stringProblem(operand);
      return "must be a number or a string (strings compare by Unicode code point, e.g. ISO 8601 timestamps)";
    case "$exists":
      return typeof operand === "boolean" ? null : "must be true or false";
    case "$prefix":
      return typeof operand === "string" ? stringProblem(operand) : "must be a string";
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function stringProblem(s: string): string | null {
  if (s.length > MAX_STRING) return `must have at most ${MAX_STRING} characters`;
  if (s.includes("\u0000")) return "must not contain the NUL character \\u0000";
  if (LONE_SURROGATE.test(s)) return "must be well-formed Unicode (a lone surrogate was found)";
  return null;
}

function pathProblem(path: string): string | null {
  const segments = path.split(".");
  if (!(FILTER_ROOTS as readonly string[]).includes(segments[0]!)) {
    return `must be a dot path into the event starting with ${FILTER_ROOTS.join(", ")} (e.g. "data.amount")`;
  }
  if (segments.length > 1 && segments[0] !== "data") return `${segments[0]} is a string; only data has fields`;
  if (segments.length > MAX_DEPTH + 1) return `must have at most ${MAX_DEPTH + 1} segments`;
  if (!segments.every((s) => SEGMENT.test(s))) return "segments must be 1 to 100 letters, digits, _ or - (separated by dots)";
  return null;
}

/** Throws OutboundValidationError naming every problem of `filter`, located under `where` (e.g. "filter"). */
export function checkFilter(filter: unknown, where = "filter"): Filter {
  const issues = filterProblems(filter).map((i) => ({ path: i.path === "(root)" ? where : `${where}.${i.path}`, message: i.message }));
  if (issues.length > 0) {
    throw new OutboundValidationError(`Invalid ${where}: ${issues[0]!.path}: ${issues[0]!.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ""}.`, issues);
  }
  return filter as Filter;
}

// ---------------------------------------------------------------------------------------------
// Compilation to a PostgreSQL jsonpath predicate (the filter must be valid: checkFilter first).

/** `@."data"."amount"`: keys are quoted, so a segment is never read as a keyword or method. */
const pathExpr = (path: string) => `@${path.split(".").map((s) => `."${s}"`).join("")}`;
/** A jsonpath literal: JSON's string escapes are jsonpath's too, and numbers are JSON numbers. */
const literal = (v: Scalar) => (v === null ? "null" : JSON.stringify(v));
/** A two-valued leaf: true when the body has the field and it satisfies `predicate`, false otherwise (never unknown). */
const leaf = (predicate: string) => `exists($ ? (${predicate}))`;

const JSONPATH_COMPARISON = { $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" } as const;

function compileCondition(path: string, cond: unknown): string[] {
  const at = pathExpr(path);
  if (!isPlainObject(cond)) return [leaf(`${at} == ${literal(cond as Scalar)}`)];
  return Object.entries(cond).map(([op, operand]) => {
    switch (op as Operator) {
      case "$eq": return leaf(`${at} == ${literal(operand as Scalar)}`);
      case "$neq": return `!${leaf(`${at} == ${literal(operand as Scalar)}`)}`;
      case "$in": return leaf((operand as Scalar[]).map((v) => `${at} == ${literal(v)}`).join(" || "));
      case "$nin": return `!${leaf((operand as Scalar[]).map((v) => `${at} == ${literal(v)}`).join(" || "))}`;
      case "$gt": case "$gte": case "$lt": case "$lte":
        return leaf(`${at} ${JSONPATH_COMPARISON[op as keyof typeof JSONPATH_COMPARISON]} ${literal(operand as Scalar)}`);
      case "$exists": return operand ? leaf(`exists(${at})`) : `!${leaf(`exists(${at})`)}`;
      case "$prefix": return leaf(`${at} starts with ${literal(operand as string)}`);
      case "$contains": {
        // A string holding the substring (flag "q": the pattern is literal text), or an array
        // holding an element equal to the operand. In strict mode the other branch is unknown,
        // which `||` with true still makes true.
        const element = `exists(${at}[*] ? (@ == ${literal(operand as Scalar)}))`;
        return leaf(typeof operand === "string" ? `${at} like_regex ${literal(operand)} flag "q" || ${element}` : element);
      }
    }
    throw new Error(`unreachable: operator ${op}`);
  });
}

function compileFilter(filter: Filter): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (key === "$and") parts.push(...(value as Filter[]).map((f) => `(${compileFilter(f)})`));
    else if (key === "$or") parts.push(`(${(value as Filter[]).map((f) => `(${compileFilter(f)})`).join(" || ")})`);
    else if (key === "$not") parts.push(`!(${compileFilter(value as Filter)})`);
    else parts.push(...compileCondition(key, value));
  }
  return parts.join(" && ");
}

/** The jsonpath predicate (text, for a `jsonpath` column) that holds for an event body exactly when `filter` matches it. */
export function filterToJsonPath(filter: unknown): string {
  return `strict ${compileFilter(checkFilter(filter))}`;
}

// ---------------------------------------------------------------------------------------------
// The same rules in JavaScript.

const MISSING = Symbol("missing");

function resolve(body: unknown, path: string): unknown {
  let at: unknown = body;
  for (const segment of path.split(".")) {
    if (!isPlainObject(at) || !Object.prototype.hasOwnProperty.call(at, segment)) return MISSING;
    at = (at as Record<string, unknown>)[segment];
  }
  return at;
}

/** Equality of a JSON value with a scalar operand: same type and value (no coercion; objects and arrays never equal). */
const equals = (value: unknown, operand: Scalar) => value === operand;

/** Code-point order, as PostgreSQL's jsonpath compares strings (JavaScript's < compares UTF-16 units). */
function compareStrings(a: string, b: string): number {
  const x = [...a], y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function ordered(value: unknown, operand: number | string, op: keyof typeof JSONPATH_COMPARISON): boolean {
  let d: number;
  if (typeof value === "number" && typeof operand === "number") d = value - operand;
  else if (typeof value === "string" && typeof operand === "string") d = compareStrings(value, operand);
  else return false;
  return op === "$gt" ? d > 0 : op === "$gte" ? d >= 0 : op === "$lt" ? d < 0 : d <= 0;
}

function holds(value: unknown, op: Operator, operand: unknown): boolean {
  switch (op) {
    case "$eq": return value !== MISSING && equals(value, operand as Scalar);
    case "$neq": return !(value !== MISSING && equals(value, operand as Scalar));
    case "$in": return value !== MISSING && (operand as Scalar[]).some((v) => equals(value, v));
    case "$nin": return !(value !== MISSING && (operand as Scalar[]).some((v) => equals(value, v)));
    case "$gt": case "$gte": case "$lt": case "$lte": return ordered(value, operand as number | string, op);
    case "$exists": return (value !== MISSING) === operand;
    case "$prefix": return typeof value === "string" && value.startsWith(operand as string);
    case "$contains":
      if (typeof value === "string" && typeof operand === "string") return value.includes(operand);
      return Array.isArray(value) && value.some((v) => equals(v, operand as Scalar));
  }
}

/** Whether `filter` (valid) matches the event body `{ id, type, timestamp, data }`. */
export function matchesFilter(filter: Filter, body: unknown): boolean {
  for (const [key, value] of Object.entries(filter)) {
    if (key === "$and") { if (!(value as Filter[]).every((f) => matchesFilter(f, body))) return false; }
    else if (key === "$or") { if (!(value as Filter[]).some((f) => matchesFilter(f, body))) return false; }
    else if (key === "$not") { if (matchesFilter(value as Filter, body)) return false; }
    else {
      const found = resolve(body, key);
      const conditions = isPlainObject(value) ? Object.entries(value) : [["$eq", value] as const];
      if (!conditions.every(([op, operand]) => holds(found, op as Operator, operand))) return false;
    }
  }
  return true;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);
}

function safeJson(v: unknown): string | null {
  if (!isPlainObject(v)) return null;
  try {
    return JSON.stringify(v);
  } catch {
    return null;
  }
}
