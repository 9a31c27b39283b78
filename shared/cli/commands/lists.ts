/** Reading list answers of the management API. */

/**
 * The rows of a list answer. Each list route wraps its rows in one named array
 * (`{ deadLetters: [...] }`, `{ entries: [...] }`, `{ subscriptions: [...] }`); a bare array is accepted too.
 */
export function itemsOf<T>(answer: unknown): T[] {
  if (Array.isArray(answer)) return answer as T[];
  const obj = (answer ?? {}) as Record<string, unknown>;
  const arrays = Object.values(obj).filter(Array.isArray);
  return arrays.length === 1 ? (arrays[0] as T[]) : [];
}
