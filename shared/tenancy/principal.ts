/**
 * Who a management request acts for, as the authenticator established it (the router's
 * `Principal`): the holder of ADMIN_TOKEN (the bootstrap credential), or an API key with its scope.
 * A module of its own, below the router and the tenancy modules, so both import it without a cycle.
 */

/** ADMIN_TOKEN: acts as an operator key with write access; recorded as `bootstrap`. */
export interface BootstrapPrincipal {
  kind: "admin";
}

/**
 * An API key (shared/tenancy/apiKeys.ts), or a customer portal session (shared/portal/sessions.ts):
 * then `keyId` is the session id (`ps_…`, the audit log's actor), `applicationId` its link's, and
 * `session` says so. A session is authorized exactly as an application key with its access.
 */
export interface KeyPrincipal {
  kind: "key";
  keyId: string;
  /** Set for a portal session: when it ends. */
  session?: { expiresAt: Date; returnUrl: string | null; csrfToken: string };
  /** null: every application (an operator key); else the only one it sees. */
  applicationId: string | null;
  /** `read` changes nothing. */
  access: "write" | "read";
}

export type AnyPrincipal = BootstrapPrincipal | KeyPrincipal;

/** The audit log's "who": the key id, or `bootstrap` for ADMIN_TOKEN. */
export function actorOf(principal: AnyPrincipal | undefined): string {
  return principal?.kind === "key" ? principal.keyId : "bootstrap";
}

/** The application a principal is confined to, or undefined for operators (every application). */
export function confinedTo(principal: AnyPrincipal | undefined): string | undefined {
  return principal?.kind === "key" && principal.applicationId !== null ? principal.applicationId : undefined;
}
