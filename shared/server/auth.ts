/**
 * Who a request acts for. Authentication is a step of its own (./core.ts runs it on `auth:
 * "admin"` routes only) so another scheme (issue 17: applications, scoped keys) plugs in without
 * touching the routes.
 */
import type { IncomingHttpHeaders } from "node:http";
import { timingSafeEqual } from "node:crypto";
import type { AnyPrincipal } from "../tenancy/principal.js";

/**
 * Who a request acts for, as the authenticator established it: the holder of the admin token
 * (`admin`, the bootstrap credential), or an API key with its scope (`key`, issue 17:
 * shared/tenancy/principal.ts); shared/tenancy/access.ts authorizes each route by it.
 */
export type Principal = AnyPrincipal;

/**
 * Decides who sent a request from its headers (lower-case names): a Principal, or undefined
 * (answered 401). Runs only for `auth: "admin"` routes. Default: the bearer token compared in
 * constant time with ADMIN_TOKEN. `request.method` lets a cookie credential (the portal's session,
 * shared/portal/sessionAuth.ts) demand its CSRF proof on the methods that change something; it
 * may throw an HttpError (403) to refuse the request outright.
 */
export type Authenticator = (headers: IncomingHttpHeaders, request?: { method: string }) => Principal | undefined | Promise<Principal | undefined>;

/** The default authenticator: `Authorization: Bearer <token>`, compared in constant time. */
export function bearerAuthenticator(token: string): Authenticator {
  return (headers) => (bearerMatches(headers.authorization, token) ? { kind: "admin" } : undefined);
}

/**
 * Whether `header` is `Bearer <token>`, compared in constant time (length aside). An empty token
 * matches nothing: a host that lost its token must not open the API to requests without one.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  // Said outright, not left to the pattern below (a credential has at least one byte, so it never
  // equals ""): this test made `false` survives as equivalent (docs/testing.md).
  // Stryker disable next-line StringLiteral: equivalent: the empty token is then refused by the pattern, and a token "Stryker was here!" (refused here) is no host's
  if (token === "") return false;
  // Stryker disable next-line StringLiteral: equivalent: any other stand-in for a missing header ("Stryker was here!") is no Bearer header either
  const given = /^Bearer (.+)$/i.exec(header ?? "");
  if (!given) return false;
  const a = Buffer.from(given[1]!);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
