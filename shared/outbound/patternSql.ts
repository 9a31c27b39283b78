/**
 * The subscription-pattern match in SQL, for statements that fan events out outside `enqueue`
 * (a backfill). Same rules as `matchesEventType` and enqueue's fan-out: exact, `*`, or `prefix.*`.
 */

/** True when one of the patterns in the text[] expression `patterns` matches the text expression `type`. */
export function matchesPatternSql(patterns: string, type: string): string {
  return `EXISTS (
       SELECT 1 FROM unnest(${patterns}) AS p(pattern)
       WHERE p.pattern = ${type}
          OR p.pattern = '*'
          OR (right(p.pattern, 2) = '.*' AND starts_with(${type}, left(p.pattern, -1)))
     )`;
}

/**
 * True when one of `patterns` names the type `type` explicitly: exactly or by `prefix.*`, but not
 * by `*`. How the platform's own events reach a tenant's subscriptions (shared/platformEvents.ts):
 * a subscription to everything of its application gets that application's business events, not
 * the platform's notices about them, unless it asks for those by name.
 */
export function namesTypeSql(patterns: string, type: string): string {
  return `EXISTS (
       SELECT 1 FROM unnest(${patterns}) AS p(pattern)
       WHERE p.pattern = ${type}
          OR (right(p.pattern, 2) = '.*' AND starts_with(${type}, left(p.pattern, -1)))
     )`;
}
