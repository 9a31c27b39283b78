/** Turns zod results into our typed validation error, so every boundary answers the same way. */
import type * as z from "zod/mini";
import { safeParse } from "../safeParse.js";
import { OutboundValidationError, type Issue } from "./errors.js";

/** `a.b[2].c` from a zod path. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || "(root)";
}

/** Parses `input` with `schema`, or throws OutboundValidationError listing every issue. */
export function parseOrThrow<S extends z.core.$ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const parsed = safeParse(schema, input);
  if (parsed.success) return parsed.data;
  const issues: Issue[] = parsed.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message }));
  const first = issues[0];
  throw new OutboundValidationError(
    `Invalid ${what}: ${first ? `${first.path}: ${first.message}` : "rejected"}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ""}.`,
    issues,
  );
}
