/**
 * Custom headers of a subscription: sent with every attempt (an API key the receiver wants, a
 * routing hint). They never replace what the platform itself sends or what HTTP reserves: the
 * signature headers (`webhook-*`), the framing (`host`, `content-length`, `transfer-encoding`),
 * hop-by-hop headers, and the `content-type` and `user-agent` the relay sets.
 */
import * as z from "zod/mini";

/** Most custom headers on one subscription. */
export const MAX_CUSTOM_HEADERS = 20;
const MAX_VALUE_LENGTH = 1000;

/** Names the platform or HTTP itself owns (lower case). `webhook-*` is refused by prefix. */
const RESERVED = new Set([
  "host", "content-length", "content-type", "user-agent", "transfer-encoding", "connection", "keep-alive",
  "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "upgrade", "expect",
]);

/** An RFC 9110 token: the characters a field name may have. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
/** Visible ASCII, spaces and tabs: no CR or LF (no header injection), no control characters. */
const VALUE = /^[\t\x20-\x7e]*$/;

/** Why `name` cannot be a custom header, or null. */
export function headerNameProblem(name: string): string | null {
  if (!TOKEN.test(name)) return "is not a valid header name (letters, digits and !#$%&'*+.^_`|~-)";
  if (name.startsWith("webhook-")) return "webhook-* headers carry the signature; the relay sets them";
  if (RESERVED.has(name)) return "is set by the relay or by HTTP itself and cannot be overridden";
  return null;
}

/**
 * `{ name: value }`; names are case-insensitive and kept in lower case. Two names differing only
 * in case are refused (which one should win is not ours to guess).
 */
export const headersSchema = z.pipe(
  z.record(z.string(), z.string()).check(z.superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > MAX_CUSTOM_HEADERS) ctx.addIssue({ code: "custom", message: `at most ${MAX_CUSTOM_HEADERS} headers` });
    const seen = new Set<string>();
    for (const name of names) {
      const lower = name.toLowerCase();
      const problem = headerNameProblem(lower);
      if (problem) ctx.addIssue({ code: "custom", path: [name], message: `${name} ${problem}` });
      if (seen.has(lower)) ctx.addIssue({ code: "custom", path: [name], message: `${name} is given twice (names are case-insensitive)` });
      seen.add(lower);
      const value = headers[name]!;
      if (!VALUE.test(value)) ctx.addIssue({ code: "custom", path: [name], message: "must be printable ASCII on one line (no CR, LF or control characters)" });
      if (value.length > MAX_VALUE_LENGTH) ctx.addIssue({ code: "custom", path: [name], message: `must have at most ${MAX_VALUE_LENGTH} characters` });
    }
  })),
  z.transform((headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v.trim()]))),
);
