/**
 * Authorization and the audit log, for every management route at once: `withAccessControl`
 * wraps each authenticated route's handler so that it
 * 1. refuses a change to a read-only key (403 `read_only`),
 * 2. refuses an operator-only operation to an application key (403 `forbidden`),
 * 3. answers 404 when an application key names another application's resource (its existence is
 *    not leaked: the same answer as for an id that does not exist),
 * 4. records every successful change in the audit log.
 * What each route needs is declared in its OperationDoc (`access`, ./accessRule.ts); a route that
 * declares nothing stops the platform at startup (or, allowed, is operator-write-only). Lists and creations confine themselves to the key's
 * application with `listScope` and `targetApplication`.
 */
import type { Logger } from "pino";
import type { Queryable } from "../db/port.js";
import { NotFoundError } from "../outbound/errors.js";
import { HttpError, type Request, type Route } from "../server/router.js";
import { UNDECLARED_ACCESS, type AccessRule, type ResourceKind } from "./accessRule.js";
import { DEFAULT_APPLICATION_ID } from "./applications.js";
import { recordChange } from "./auditLog.js";
import { actorOf, confinedTo, type AnyPrincipal } from "./principal.js";

const OWNER_SQL: Record<ResourceKind, string> = {
  application: "SELECT id AS application_id FROM outbound_applications WHERE id = $1",
  subscription: "SELECT application_id FROM outbound_subscriptions WHERE id = $1",
  event: "SELECT application_id FROM outbound_events WHERE id = $1",
  // A delivery belongs to its subscription's application (fan-out, resends, tests and backfills
  // only ever pair an event with subscriptions of its own application).
  delivery: "SELECT s.application_id FROM outbound_deliveries d JOIN outbound_subscriptions s ON s.id = d.subscription_id WHERE d.id = $1",
  deadLetter: "SELECT s.application_id FROM outbound_deliveries d JOIN outbound_subscriptions s ON s.id = d.subscription_id WHERE d.id = $1",
};

/** As the repositories' NotFoundError names each: another application's resource answers exactly as a missing one. */
const NOUN: Record<ResourceKind, string> = { application: "application", subscription: "subscription", event: "event", delivery: "delivery", deadLetter: "dead letter" };

/** The application owning resource `id` of `kind`, or null when there is none with that id. */
export async function ownerOf(q: Queryable, kind: ResourceKind, id: string): Promise<string | null> {
  const { rows } = await q.query<{ application_id: string }>(OWNER_SQL[kind], [id]);
  return rows[0]?.application_id ?? null;
}

export const principalOf = (req: Request): AnyPrincipal | undefined => req.principal as AnyPrincipal | undefined;

/** Who made a request, as deliveries and replays record it (`requestedBy`): a key id, or `bootstrap`. */
export const actorFor = (req: Request): string => actorOf(principalOf(req));

/**
 * The application a list shows: an application key's own (naming another answers 404), or the
 * operator's `applicationId` filter, or undefined: every application.
 */
export function listScope(req: Request, requested?: string): string | undefined {
  const own = confinedTo(principalOf(req));
  if (own !== undefined && requested !== undefined && requested !== own) throw new NotFoundError("application", requested);
  return own ?? requested;
}

/**
 * The application a new subscription or event goes to: an application key's own (naming another
 * answers 404), else the one the operator names, else the default application.
 */
export function targetApplication(req: Request, requested?: string | null): string {
  return listScope(req, requested ?? undefined) ?? DEFAULT_APPLICATION_ID;
}

/**
 * `input` (a JSON body) with its `applicationId` settled by `targetApplication`. A body that is not
 * an object, or whose `applicationId` is not a string, is left for the schema to refuse precisely.
 */
export function inApplication(req: Request, input: unknown): unknown {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return input;
  const given = (input as { applicationId?: unknown }).applicationId;
  if (given !== undefined && given !== null && typeof given !== "string") return input;
  return { ...input, applicationId: targetApplication(req, given as string | null | undefined) };
}

/** Handlers already wrapped, so wrapping twice checks and records once. */
const GUARDED = new WeakSet<Route["handler"]>();

/** An authenticated route whose doc declares no `access`: refused at startup, with what to add. */
export class UndeclaredAccessError extends Error {
  override name = "UndeclaredAccessError";
  constructor(readonly routes: string[]) {
    super(`${routes.length} authenticated route(s) declare no access: ${routes.join(", ")}. Add \`access: { action: "read" | "write", audience: "operator" | "application", resource? }\` to each one's OperationDoc (shared/tenancy/accessRule.ts, docs/tenancy.md#scopes).`);
  }
}

/**
 * `routes` with authorization and the audit log on every authenticated route (public ones as they
 * are). An authenticated route that declares no access fails here, at startup
 * (UndeclaredAccessError), unless `allowUndeclared`: then it is operator-write-only.
 */
export function withAccessControl(routes: readonly Route[], db: Queryable, logger?: Logger, options: { allowUndeclared?: boolean } = {}): Route[] {
  const undeclared = routes.filter((r) => r.auth === "admin" && !r.doc?.access).map((r) => `${r.method} ${r.path}`);
  if (undeclared.length > 0 && !options.allowUndeclared) throw new UndeclaredAccessError(undeclared);
  return routes.map((route) => {
    if (route.auth !== "admin" || GUARDED.has(route.handler)) return route;
    const rule: AccessRule = route.doc?.access ?? UNDECLARED_ACCESS;
    const operation = route.doc?.operationId ?? `${route.method} ${route.path}`;
    const handler: Route["handler"] = async (req) => {
      const principal = principalOf(req);
      let owner: string | null | undefined;
      const resourceId = rule.resource ? req.params[rule.param ?? "id"] : undefined;
      if (principal?.kind === "key") {
        if (rule.action === "write" && principal.access === "read") {
          throw new HttpError(403, "read_only", `This key (${principal.keyId}) is read-only: ${operation} changes something; use a key with write access.`);
        }
        if (principal.applicationId !== null) {
          if (rule.audience === "operator") {
            throw new HttpError(403, "forbidden", `${operation} is for operators; this key (${principal.keyId}) is scoped to application ${principal.applicationId}.`);
          }
          if (rule.resource) {
            // A rule naming a parameter the request lacks is a mistake in its declaration: refused
            // (fail closed) rather than the ownership check skipped.
            if (resourceId === undefined) {
              throw new HttpError(403, "forbidden", `${operation} names its ${NOUN[rule.resource]} by the path parameter "${rule.param ?? "id"}", which this request lacks: refused to application keys.`);
            }
            owner = await ownerOf(db, rule.resource, resourceId);
            if (owner !== principal.applicationId) throw new HttpError(404, "not_found", `No ${NOUN[rule.resource]} with id ${JSON.stringify(resourceId)}.`, { entity: NOUN[rule.resource], id: resourceId });
          }
        }
      }
      const response = await route.handler(req);
      if (rule.action === "write" && rule.audited !== false && response.status < 400) {
        // Its conditions only save a query: the lookup is repeated or tried without a resource
        // (refused, so null) in mutants that drop one, giving the same entry (docs/testing.md).
        // Stryker disable next-line ArrowFunction: equivalent: null or undefined, the entry's applicationId falls through `??` alike
        if (owner === undefined && rule.resource && resourceId !== undefined) owner = await ownerOf(db, rule.resource, resourceId).catch(() => null);
        const body = (typeof response.body === "object" && response.body !== null ? response.body : {}) as { id?: unknown; eventId?: unknown; applicationId?: unknown };
        const created = typeof body.id === "string" ? body.id : typeof body.eventId === "string" ? body.eventId : null;
        try {
          await recordChange(db, {
            actor: actorOf(principal), operation, method: req.method, path: req.path, status: response.status,
            resourceId: resourceId ?? created,
            applicationId: owner ?? (typeof body.applicationId === "string" ? body.applicationId : null) ?? confinedTo(principal) ?? null,
          });
        } catch (error) {
          // The change is made and cannot be undone here; answering an error would make the caller
          // retry a change that took effect. Logged loudly instead.
          logger?.error({ err: error, operation, actor: actorOf(principal) }, "audit log write failed for a change that was made");
        }
      }
      return response;
    };
    GUARDED.add(handler);
    return { ...route, handler };
  });
}
