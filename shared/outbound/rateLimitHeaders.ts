/**
 * What a receiver says about its rate limit in response headers, in the shapes met in the wild:
 * - the IETF draft's current fields (draft-ietf-httpapi-ratelimit-headers, 08 and later):
 *   `RateLimit-Policy: "default";q=100;w=60` (quota q per window of w seconds) and
 *   `RateLimit: "default";r=40;t=12` (r left, t seconds until the quota resets);
 * - its earlier fields (drafts 00–07): `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`
 *   (seconds), and `RateLimit-Policy: 100;w=60`;
 * - the de facto `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds, or a
 *   Unix time when it is that large, as GitHub sends).
 * Several policies or list members: the most restrictive one wins (the lowest rate, the fewest left).
 * Anything unparseable is ignored, never an error: the headers are hints, the 429 is the fact.
 */

/** The receiver's stated limit; each field null when it did not say. */
export interface RateLimitInfo {
  /** The quota as a rate: q / w of its most restrictive policy. */
  quotaPerSecond: number | null;
  /** Requests left in the current window. */
  remaining: number | null;
  /** Seconds until the window resets (its quota is whole again). */
  resetSeconds: number | null;
}

/** The response headers this module reads (lower case, as undici gives them). */
export const RATE_LIMIT_HEADERS = [
  "ratelimit", "ratelimit-policy", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
  "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset",
] as const;

/** A reset this large is a Unix time in seconds, not a delay (no window lasts 30 years). */
const EPOCH_THRESHOLD_SECONDS = 1e9;

const number = (text: string | undefined): number | null => {
  if (text === undefined) return null;
  const t = text.trim();
  if (!/^\d+(\.\d+)?$/.test(t)) return null;
  return Number(t);
};

/** The parameters of one structured-field list member (`"name";q=10;w=1` or `10;w=1`), and its bare item. */
function members(value: string): { item: string; params: Map<string, string> }[] {
  return value.split(",").map((member) => {
    const [item = "", ...params] = member.split(";").map((p) => p.trim());
    const map = new Map<string, string>();
    for (const p of params) {
      const eq = p.indexOf("=");
      if (eq > 0) map.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim());
    }
    return { item, params: map };
  });
}

/** The lowest of the values given, null when none is a number. */
const lowest = (values: (number | null)[]): number | null => {
  const xs = values.filter((x): x is number => x !== null);
  return xs.length === 0 ? null : Math.min(...xs);
};

function reset(text: string | undefined, nowMs: number): number | null {
  const n = number(text);
  if (n === null) return null;
  return n >= EPOCH_THRESHOLD_SECONDS ? Math.max(0, n - nowMs / 1000) : n;
}

/**
 * Reads the receiver's rate-limit headers; null when it sent none of them.
 * @example parseRateLimit({ "ratelimit-policy": '"default";q=50;w=1', ratelimit: '"default";r=0;t=1' })
 *   // { quotaPerSecond: 50, remaining: 0, resetSeconds: 1 }
 */
export function parseRateLimit(headers: Readonly<Record<string, string | undefined>>, nowMs: number = Date.now()): RateLimitInfo | null {
  if (!RATE_LIMIT_HEADERS.some((h) => headers[h] !== undefined)) return null;
  // Policies: q (or the bare item of the older drafts) per w seconds. Without a window the quota is no rate.
  const policy = headers["ratelimit-policy"];
  const quotaPerSecond = policy === undefined ? null : lowest(members(policy).map(({ item, params }) => {
    const q = number(params.get("q") ?? item);
    const w = number(params.get("w"));
    return q !== null && w !== null && w > 0 ? q / w : null;
  }));
  // The draft's combined field: `"name";r=…;t=…` (08+) or `limit=…, remaining=…, reset=…` (07).
  let remaining: number | null = null;
  let resetSeconds: number | null = null;
  const combined = headers["ratelimit"];
  if (combined !== undefined) {
    const parts = members(combined);
    const older = new Map(combined.split(",").map((p) => p.trim().split("=").map((s) => s.trim()) as [string, string]));
    remaining = lowest([...parts.map((m) => number(m.params.get("r"))), number(older.get("remaining"))]);
    resetSeconds = lowest([...parts.map((m) => number(m.params.get("t"))), number(older.get("reset"))]);
  }
  remaining ??= number(headers["ratelimit-remaining"]) ?? number(headers["x-ratelimit-remaining"]);
  resetSeconds ??= reset(headers["ratelimit-reset"], nowMs) ?? reset(headers["x-ratelimit-reset"], nowMs);
  if (quotaPerSecond === null && remaining === null && resetSeconds === null) return null;
  return { quotaPerSecond, remaining, resetSeconds };
}
