/**
 * Event type names and the patterns subscriptions use to select them.
 *
 * A type is dot-separated segments of letters, digits, `_` and `-` (`order.paid`).
 * A pattern is a type (exact match), `prefix.*` (any type under `prefix.`, at any depth:
 * `order.*` matches `order.paid` and `order.paid.partially`, not `order` nor `orders.paid`), or `*` (all).
 * The same rule is applied in SQL by `enqueue` (see `enqueue.ts`); a test keeps both equal.
 */

const SEGMENT = "[A-Za-z0-9_-]+";
const TYPE = new RegExp(`^${SEGMENT}(\\.${SEGMENT})*$`);
const WILDCARD = new RegExp(`^(${SEGMENT}(\\.${SEGMENT})*\\.)\\*$`);

/** Longest accepted type or pattern, in characters. */
export const MAX_EVENT_TYPE_LENGTH = 200;

/** Why `type` is not a valid event type, or null when it is. */
export function eventTypeProblem(type: unknown): string | null {
  if (typeof type !== "string") return "must be a string such as \"order.paid\"";
  if (type.length === 0 || type.length > MAX_EVENT_TYPE_LENGTH) return `must have 1 to ${MAX_EVENT_TYPE_LENGTH} characters`;
  if (!TYPE.test(type)) return "must be dot-separated segments of letters, digits, _ and - (e.g. \"order.paid\")";
  return null;
}

/** Why `pattern` is not a valid subscription pattern, or null when it is. */
export function eventPatternProblem(pattern: unknown): string | null {
  if (pattern === "*") return null;
  if (typeof pattern === "string" && pattern.length <= MAX_EVENT_TYPE_LENGTH && WILDCARD.test(pattern)) return null;
  const typeProblem = eventTypeProblem(pattern);
  return typeProblem === null ? null : `must be an event type ("order.paid"), a prefix wildcard ("order.*") or "*"`;
}

/** Whether a subscription `pattern` selects events of `type`. */
export function matchesEventType(pattern: string, type: string): boolean {
  if (pattern === "*") return true;
  if (pattern.endsWith(".*")) return type.startsWith(pattern.slice(0, -1));
  return pattern === type;
}
