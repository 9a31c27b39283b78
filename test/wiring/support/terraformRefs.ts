/**
 * Terraform expressions in synthesized JSON (`${aws_sqs_queue.queue_queue_1A2B.url}`), resolved
 * to the wiring test's local stand-ins. Every expression must be resolved: one the test does not
 * know (a new setting pointing at a new resource) fails the test, naming it, instead of reaching
 * the function as literal text.
 */

/** Resolves one expression (the text between `${` and `}`), or undefined when unknown. */
export type RefResolver = (expression: string) => string | undefined;

export class UnresolvedReferenceError extends Error {
  override name = "UnresolvedReferenceError";
}

/** The expressions in a string, in order (nested braces inside an expression are kept whole). */
export function expressionsIn(text: string): string[] {
  const found: string[] = [];
  for (let i = text.indexOf("${"); i !== -1; i = text.indexOf("${", i + 2)) {
    let depth = 0;
    for (let j = i + 2; j < text.length; j++) {
      if (text[j] === "{") depth++;
      else if (text[j] === "}") {
        if (depth === 0) {
          found.push(text.slice(i + 2, j));
          break;
        }
        depth--;
      }
    }
  }
  return found;
}

/** Replaces every expression in `value` (strings, arrays and objects, recursively). */
export function resolveRefs<T>(value: T, resolve: RefResolver, where = "value"): T {
  const unresolved = new Set<string>();
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") {
      let out = v;
      for (const expression of expressionsIn(v)) {
        const resolved = resolve(expression);
        if (resolved === undefined) unresolved.add(expression);
        else out = out.replace(`\${${expression}}`, resolved);
      }
      return out;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  const result = walk(value) as T;
  if (unresolved.size > 0) {
    throw new UnresolvedReferenceError(`${where} refers to what the wiring test has no stand-in for:\n${[...unresolved].map((e) => `- \${${e}}`).join("\n")}`);
  }
  return result;
}

/** `aws_sqs_queue.queue_queue_1A2B.url` → { type, name, path: ["url"] }; undefined for a function call or variable. */
export function parseReference(expression: string): { type: string; name: string; path: string[] } | undefined {
  const m = /^(data\.)?([a-z][a-z0-9_]*)\.([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_]+|\[\d+\])*)$/.exec(expression.trim());
  if (!m) return undefined;
  const path = (m[4] ?? "").split(/\.|\[|\]/).filter(Boolean);
  return { type: `${m[1] ?? ""}${m[2]}`, name: m[3]!, path };
}
