/**
 * The default application: every row that existed before migration 014 moved to it, and every
 * call that names no application uses it, so single-tenant use needs no set-up. A leaf module, so
 * the outbound core can name it without depending on the tenancy modules.
 */
export const DEFAULT_APPLICATION_ID = "app_default";

/**
 * The platform's own application: the alert subscription, each forwarding partner's
 * subscription, and their events. Operator-only: no key can be scoped to it (docs/tenancy.md).
 */
export const PLATFORM_APPLICATION_ID = "app_platform";
