/**
 * The principal of a request carrying the portal's session cookie: an application key's, scoped
 * to the session's application and access (shared/tenancy/principal.ts), once the cookie names a
 * live session and, for a change, the CSRF checks pass (./sessionAuth.ts).
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Queryable } from "../db/port.js";
import type { KeyPrincipal } from "../tenancy/principal.js";
import { checkCsrf, cookieValue, SESSION_COOKIE } from "./sessionAuth.js";
import { csrfTokenFor, identifyPortalSession } from "./sessions.js";

export async function portalSessionPrincipal(db: Queryable, headers: IncomingHttpHeaders, method: string): Promise<KeyPrincipal | undefined> {
  const token = cookieValue(headers, SESSION_COOKIE);
  if (!token) return undefined;
  const session = await identifyPortalSession(db, token);
  if (!session) return undefined;
  const csrfToken = csrfTokenFor(token);
  checkCsrf(headers, method, csrfToken);
  return {
    kind: "key", keyId: session.sessionId, applicationId: session.applicationId, access: session.access,
    session: { expiresAt: session.expiresAt, returnUrl: session.returnUrl, csrfToken },
  };
}
