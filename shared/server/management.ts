/**
 * The management application: every route an operator, the CLI and the admin page use
 * (subscriptions, events, deliveries, dead letters, the inbox views and replays, the admin page,
 * health, the OpenAPI document and its reference page), built from one context. The local
 * platform (shared/platform.ts) and the cloud management functions (shared/cloud/management.ts)
 * both serve exactly this list, so the API, its validation and its errors are the same everywhere.
 *
 * What it leaves out: the background workers, and the inbound webhook route (`POST
 * /webhooks/:partner`), which the local platform adds (`ingest`) and the cloud's ingest function
 * serves; the document describes it either way.
 */
import type { PlatformContext } from "../context.js";
import { isUnavailable } from "../db/port.js";
import { healthSchema } from "./schemas.js";
import { unsentDeliveriesProblem } from "../outbound/unsent.js";
import { HttpError, type Route } from "./core.js";
import { adminRoutes } from "./routes/admin.js";
import { documentRoutes } from "./routes/document.js";
import { inboxRoutes, RECEIVE_WEBHOOK_DOC } from "./routes/inbound.js";
import { outboundRoutes } from "./routes/outbound.js";
import { subscriptionRoutes } from "./routes/subscriptions.js";
import { catalogueRoutes } from "./routes/catalogue.js";
import { forwardingRoutes } from "./routes/forwarding.js";
import { listenerRoutes } from "./routes/listeners.js";
import { instrumentRoutes } from "../telemetry/instrument.js";
import { withAccessControl } from "../tenancy/access.js";
import { tenancyRoutes } from "./routes/tenancy.js";
import { portalRoutes } from "./routes/portal.js";

export interface ManagementContext extends PlatformContext {
  /**
   * Told after an operation that made deliveries due (an event sent, a dead letter replayed, a
   * subscription resumed…), once it is committed. Locally nothing is needed: the commit's NOTIFY
   * wakes the relay. In the cloud the relay runs on a schedule; a host that can start it sooner
   * does so here. Its failure is logged, never the caller's: the scheduled run delivers anyway.
   */
  wakeRelay?: () => Promise<void>;
}

export interface ManagementOptions {
  /** The inbound webhook route, when this host serves it too (the local platform). */
  ingest?: Route;
  /** `GET /metrics` (shared/server/routes/metrics.ts), when this host serves it (the local platform). */
  metrics?: Route;
}

/** Operations after which deliveries may be due now. */
const MAKES_DELIVERIES_DUE = new Set([
  "sendEvent", "sendEvents", "resendEvent", "sendTestEvent", "replayDeadLetter", "replayDeadLetters",
  "createSubscription", "updateSubscription", "resumeSubscription", "enableSubscription",
  // A listener detached: what it held is due again, and the relays may resume the subscription.
  "detachListener",
]);

function healthRoute(ctx: ManagementContext): Route {
  const { db } = ctx;
  return {
    method: "GET",
    path: "/healthz",
    auth: "none",
    doc: {
      operationId: "health", tag: "Health", summary: "Whether the platform and its database answer", noDatabase: true,
      responses: {
        200: { description: "Up: `ok`, or `degraded` with `problems` (deliveries the relay cannot send for a reason of the configuration, such as secrets it cannot decrypt with its ENCRYPTION_KEYS).", schema: healthSchema },
        503: { description: "The database does not answer.", schema: healthSchema, headers: { "Retry-After": "Seconds to wait." } },
      },
    },
    handler: async () => {
      try {
        await db.query("SELECT 1");
      } catch {
        return { status: 503, headers: { "retry-after": "5" }, body: { status: "unavailable", database: db.kind } };
      }
      // Up either way (the database answers); what keeps deliveries from going is said here, not only in the relay's log.
      const problems = [await unsentDeliveriesProblem(db).catch(() => null)].filter((p): p is string => p !== null);
      return { status: 200, body: problems.length ? { status: "degraded", database: db.kind, problems } : { status: "ok", database: db.kind } };
    },
  };
}

/** Calls `ctx.wakeRelay` after a successful operation of MAKES_DELIVERIES_DUE. */
function wakingRelay(ctx: ManagementContext, route: Route): Route {
  const wake = ctx.wakeRelay;
  if (!wake || !route.doc || !MAKES_DELIVERIES_DUE.has(route.doc.operationId)) return route;
  return {
    ...route,
    handler: async (req) => {
      const response = await route.handler(req);
      if (response.status < 300) {
        await wake().catch((error: unknown) => ctx.logger.warn({ err: error, operation: route.doc!.operationId }, "could not start the relay early; the scheduled run delivers"));
      }
      return response;
    },
  };
}

/**
 * The admin page behind a base path: its own files are linked from `/admin/…`, so they are linked
 * from `<base>/admin/…` instead (app.js finds the API from where it was loaded itself).
 */
function pageUnderBase(route: Route): Route {
  if (route.method !== "GET" || route.path !== "/admin") return route;
  return {
    ...route,
    handler: async (req) => {
      const response = await route.handler(req);
      if (!req.basePath || typeof response.body !== "string") return response;
      return { ...response, body: response.body.replace(/(href|src)="\/admin\//g, `$1="${req.basePath}/admin/`) };
    },
  };
}

/** Every management route, instrumented, with `/openapi.json` and `/docs` describing them. */
export function managementRoutes(ctx: ManagementContext, options: ManagementOptions = {}): Route[] {
  // Every authenticated route is authorized by what its doc declares, and its changes audited
  // (shared/tenancy/access.ts): API keys and their scopes, the same on every host.
  const routes: Route[] = instrumentRoutes(withAccessControl([
    healthRoute(ctx),
    ...subscriptionRoutes(ctx),
    ...listenerRoutes(ctx),
    ...catalogueRoutes(ctx),
    ...outboundRoutes(ctx),
    ...(options.ingest ? [options.ingest] : []),
    ...inboxRoutes(ctx),
    ...forwardingRoutes(ctx),
    ...adminRoutes(ctx),
    ...tenancyRoutes(ctx),
    ...portalRoutes(ctx),
    ...(options.metrics ? [options.metrics] : []),
  ], ctx.db, ctx.logger)).map((route) => pageUnderBase(wakingRelay(ctx, route)));
  // Served by another function on this host: documented all the same, never mounted here.
  const elsewhere: Route[] = options.ingest ? [] : [{
    method: "POST", path: "/webhooks/:partner", auth: "none", doc: RECEIVE_WEBHOOK_DOC,
    handler: async () => { throw new Error("POST /webhooks/:partner is served by the ingest function, not here."); },
  }];
  routes.push(...documentRoutes(routes, elsewhere));
  return routes;
}

/** Database outages become 503 with Retry-After, so senders and callers retry later. */
export function mapPlatformError(error: unknown): HttpError | undefined {
  if (isUnavailable(error)) {
    return new HttpError(503, "database_unavailable", "The database is unavailable; retry later.", undefined, { "retry-after": "5" });
  }
  return undefined;
}
