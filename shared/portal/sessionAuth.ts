/**
 * The portal session as a credential: its cookie, and the CSRF checks a cookie needs.
 *
 * A cookie is sent by the browser on its own, so a page of another site could make the customer's
 * browser send a change. Each request that changes something (any method but GET and HEAD) with the
 * session cookie must therefore carry `x-csrf-token`, the session's token (csrfTokenFor), which only
 * the portal page can read (from `GET /portal/session`: no other origin can read an answer of this
 * API, it sends no CORS headers); and when the browser says where the request comes from
 * (`Sec-Fetch-Site`, `Origin`), it must be this origin. SameSite alone would not do: framing by
 * another site needs `SameSite=None`.
 */
import { timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { HttpError } from "../server/httpError.js";

export const SESSION_COOKIE = "whp_session";
export const CSRF_HEADER = "x-csrf-token";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

const first = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/** The value of cookie `name` in the request's Cookie header(s), if any. */
export function cookieValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const raw = headers.cookie;
  const text = Array.isArray(raw) ? raw.join("; ") : raw ?? "";
  for (const part of text.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Whether the browser reached us over https, as the host or a proxy in front says. */
export function isHttps(headers: IncomingHttpHeaders): boolean {
  return (first(headers["x-forwarded-proto"]) ?? "").split(",")[0]!.trim().toLowerCase() === "https";
}

/**
 * The Set-Cookie of a session: HttpOnly (no script reads it), for the API's path only, until the
 * session ends. Over https `SameSite=None; Secure; Partitioned`, so an allowed site can frame the
 * portal (Partitioned: the cookie is kept per embedding site, CHIPS, which browsers that block
 * third-party cookies still accept). Over plain http (a laptop) `SameSite=Lax`: framing then works
 * from the same site only (another port of 127.0.0.1, say); docs/portal.md#embedding.
 */
export function sessionCookie(token: string, options: { https: boolean; path: string; expiresAt: Date }): string {
  const attributes = [`${SESSION_COOKIE}=${token}`, `Path=${options.path}`, `Expires=${options.expiresAt.toUTCString()}`, "HttpOnly"];
  attributes.push(...(options.https ? ["Secure", "SameSite=None", "Partitioned"] : ["SameSite=Lax"]));
  return attributes.join("; ");
}

/** The Set-Cookie that removes the session cookie. */
export function clearedSessionCookie(options: { https: boolean; path: string }): string {
  return sessionCookie("", { ...options, expiresAt: new Date(0) });
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Refuses (403 `csrf_failed`) a request made with the session cookie that changes something
 * without the session's CSRF token, or that the browser says comes from another origin.
 */
export function checkCsrf(headers: IncomingHttpHeaders, method: string, expected: string): void {
  if (SAFE_METHODS.has(method.toUpperCase())) return;
  checkSameOrigin(headers);
  const given = first(headers[CSRF_HEADER]);
  if (!given || !sameText(given, expected)) {
    throw new HttpError(403, "csrf_failed", `Refused: a change made with the portal's session cookie needs the ${CSRF_HEADER} header of GET /portal/session (the portal page sends it).`);
  }
}

/**
 * Refuses (403 `csrf_failed`) a request the browser says comes from another site or origin
 * (`Sec-Fetch-Site`, `Origin`); one without either (a program, not a browser) passes.
 */
export function checkSameOrigin(headers: IncomingHttpHeaders): void {
  const site = first(headers["sec-fetch-site"]);
  if (site !== undefined && site !== "same-origin") {
    throw new HttpError(403, "csrf_failed", `Refused: this change was sent from another site (Sec-Fetch-Site: ${site.slice(0, 40)}); the portal's session cookie only acts for the portal's own page.`);
  }
  const origin = first(headers.origin);
  if (origin !== undefined) {
    const host = first(headers["x-forwarded-host"]) ?? first(headers.host);
    let originHost: string | undefined;
    try { originHost = new URL(origin).host; } catch { originHost = undefined; }
    if (!host || originHost !== host.split(",")[0]!.trim().toLowerCase()) {
      throw new HttpError(403, "csrf_failed", `Refused: this change comes from ${origin.slice(0, 200)}, not from the portal's own origin.`);
    }
  }
}
