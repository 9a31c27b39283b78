/**
 * Hot statements, prepared once per connection.
 *
 * The relay's claim and completion statements are long CTEs: PostgreSQL spent about as long
 * planning them as running them (4–10 ms a claim of 250 rows), and planning them once per
 * connection instead nearly doubled the relay's database throughput (measured in bench/outbound).
 *
 * A statement stays a plain SQL string that any `Queryable` runs; marking it with `prepared` only
 * tells our own pg-backed `Database` (shared/db/postgres.ts) to send it as a named statement. A
 * caller's own client (enqueue inside someone else's transaction) and PGlite run it as usual.
 *
 * Only constant texts belong here: one name per text, registered at module load, and never a
 * statement whose result columns could change under it (no `SELECT *`), since a prepared plan
 * that outlives a migration must still return the same row type.
 */
const names = new Map<string, string>();

/** Registers `text` as the statement `name` and returns the text unchanged. */
export function prepared(name: string, text: string): string {
  const existing = names.get(text);
  if (existing !== undefined && existing !== name) {
    throw new Error(`statement already prepared as "${existing}"; give each SQL text one name (got "${name}")`);
  }
  for (const [otherText, otherName] of names) {
    if (otherName === name && otherText !== text) throw new Error(`prepared statement name "${name}" is already used by another SQL text`);
  }
  names.set(text, name);
  return text;
}

/** The statement name `text` was registered under, if any. */
export const preparedName = (text: string): string | undefined => names.get(text);
