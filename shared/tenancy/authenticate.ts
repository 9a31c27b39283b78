/**
 * The management API's authenticator: `Authorization: Bearer <ADMIN_TOKEN>` (the bootstrap
 * credential: an operator with write access, recorded as `bootstrap`) or `Bearer whk_…`, an API
 * key looked up on every request (./apiKeys.ts), so a new or revoked key counts at once on every
 * server and function, with no restart and no cache to expire. A request without an
 * Authorization header may carry the customer portal's session cookie instead (docs/portal.md).
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Queryable } from "../db/port.js";
import { portalSessionPrincipal } from "../portal/sessionPrincipal.js";
import { bearerMatches } from "../server/auth.js";
import { identifyKey } from "./apiKeys.js";
import type { AnyPrincipal } from "./principal.js";

export function apiKeyAuthenticator(db: Queryable, adminToken: string): (headers: IncomingHttpHeaders, request?: { method: string }) => Promise<AnyPrincipal | undefined> {
  return async (headers, request) => {
    // No Authorization header: the customer portal's session cookie, if any (shared/portal/).
    if (headers.authorization === undefined) return portalSessionPrincipal(db, headers, request?.method ?? "GET");
    if (bearerMatches(headers.authorization, adminToken)) return { kind: "admin" };
    // Stryker disable next-line StringLiteral: equivalent: any other stand-in for a missing header ("Stryker was here!") is no Bearer header either
    const token = /^Bearer (whk_\S+)$/i.exec(headers.authorization ?? "")?.[1];
    // Made `false` (a mutant) is equivalent: identifyKey refuses a token that is not a key's format itself; said here so no lookup starts.
    if (!token) return undefined;
    const key = await identifyKey(db, token);
    return key ? { kind: "key", ...key } : undefined;
  };
}
