/**
 * Origins that may frame the portal (CSP `frame-ancestors`), as an operator writes them: a scheme,
 * a host and an optional port (`https://shop.example.com`, `https://*.example.com`,
 * `http://127.0.0.1:3000`), nothing else. Each is checked by reading it back from the URL parser,
 * so a value can never carry a path, a quote, a space or a `;` into the policy header.
 * A leaf module: the configuration and the portal settings both use it.
 */

/** Why `value` is not a framing origin, or null when it is one. */
export function originProblem(value: string): string | null {
  if (value.length > 300) return "at most 300 characters";
  const wildcard = /^(https?):\/\/\*\.(.+)$/i.exec(value);
  // `https://*.example.com`: CSP's wildcard for every subdomain; the rest must be a plain host.
  const probe = wildcard ? `${wildcard[1]}://wildcard.${wildcard[2]}` : value;
  let url: URL;
  try {
    url = new URL(probe);
  } catch {
    return "not a URL; write an origin such as https://shop.example.com";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return `use https:// (or http:// for a local test), not ${url.protocol}`;
  if (url.username || url.password) return "no credentials in an origin";
  const expected = wildcard ? `${url.protocol}//*.${url.host.slice("wildcard.".length)}` : url.origin;
  if (expected !== value.toLowerCase().replace(/\/$/, "")) return `write the origin only (scheme, host, optional port: ${expected}), no path, query or fragment`;
  return null;
}

/** The origin as the policy carries it (lower case, no trailing slash); throws on a bad one. */
export function normalizeOrigin(value: string): string {
  const problem = originProblem(value.trim());
  if (problem) throw new Error(`${JSON.stringify(value)}: ${problem}`);
  return value.trim().toLowerCase().replace(/\/$/, "");
}

/** A comma-separated list (PORTAL_FRAME_ANCESTORS) as origins; throws naming the first bad one. */
export function parseOriginList(text: string): string[] {
  return [...new Set(text.split(",").map((s) => s.trim()).filter(Boolean).map(normalizeOrigin))];
}
