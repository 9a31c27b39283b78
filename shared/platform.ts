/**
 * The local platform assembled: database, the management routes and the inbound webhook route,
 * background workers.
 * `npm start` runs it over HTTP; tests start it in-process with their own database.
 */
import type { Logger } from "pino";
import type { Config } from "./config.js";
import type { BackgroundWorker, PlatformContext } from "./context.js";
import { openDatabase } from "./db/open.js";
import { installLocalKeyring } from "./crypto/localKeys.js";
import type { Database } from "./db/port.js";
import type { Route } from "./server/router.js";
import { createLogger } from "./telemetry/log.js";
import type { Authenticator } from "./server/auth.js";
import { apiKeyAuthenticator } from "./tenancy/authenticate.js";
import { webhookRoute } from "./server/routes/inbound.js";
import { managementRoutes } from "./server/management.js";
import { startInboxWorker } from "./inbound/worker.js";
import type { InboundHandler } from "./inbound/handlers.js";
import { loadHandlers } from "./inbound/loadHandlers.js";
import { ensureForwardSubscriptions } from "./inbound/forward.js";
import { loadPartners } from "./inbound/verify/index.js";
import { startOutboundRelay } from "./outbound/worker.js";
import { startRetention } from "./retention/run.js";
import { startAlertWorker } from "./alerts.js";
import { observePlatformQueues } from "./telemetry/queueDepth.js";
import { observePlatformGauges } from "./telemetry/platformGauges.js";
import type { Telemetry } from "./telemetry/sdk.js";
import { metricsRoute } from "./server/routes/metrics.js";

export type { BackgroundWorker, PlatformContext } from "./context.js";


export interface Platform extends PlatformContext {
  routes: Route[];
  /**
   * Who sent a request to `routes`: ADMIN_TOKEN (the bootstrap credential) or an API key, looked
   * up in this platform's database (shared/tenancy/authenticate.ts). Pass it to the server.
   */
  authenticate: Authenticator;
  workers: BackgroundWorker[];
  /** Stops the workers, then closes the database if the platform opened it. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Use this database instead of opening one from the configuration (tests). */
  db?: Database;
  logger?: Logger;
  /** Start the background workers. Default: true. */
  workers?: boolean;
  /** Inbound handlers to run instead of loading INBOUND_HANDLERS (tests). */
  handlers?: readonly InboundHandler[];
  /**
   * The OpenTelemetry SDK this process installed (shared/telemetry/sdk.ts), if any: its Prometheus
   * reader serves `GET /metrics`. Absent: `/metrics` answers 404 `metrics_not_enabled`.
   */
  telemetry?: Telemetry;
}

export async function startPlatform(config: Config, options: StartOptions = {}): Promise<Platform> {
  const logger = options.logger ?? createLogger({ level: config.LOG_LEVEL });
  // Secrets are stored encrypted (docs/secrets.md): the keys are ready before anything reads or writes one.
  await installLocalKeyring(config, (message) => logger.warn(message));
  const ownsDb = !options.db;
  const db = options.db ?? (await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR }));
  const ctx: PlatformContext = { config, db, logger };
  // Partners with `forward`: their subscriptions follow the configuration (shared/inbound/forward.ts).
  await ensureForwardSubscriptions(db, loadPartners({ PARTNERS: config.PARTNERS, PARTNERS_FILE: config.PARTNERS_FILE }));

  // The management API the cloud functions serve too (shared/server/management.ts), with the
  // inbound webhook route, which in the cloud is the ingest function's.
  const routes: Route[] = managementRoutes(ctx, { ingest: webhookRoute(ctx), metrics: metricsRoute(options.telemetry?.prometheus) });

  const workers: BackgroundWorker[] = [];
  if (options.workers !== false) {
    // Each area registers its workers here.
    workers.push(startInboxWorker(ctx, options.handlers ?? (await loadHandlers(config.INBOUND_HANDLERS))));
    workers.push(await startOutboundRelay(ctx));
    // Finished outbound and inbound work past its retention is deleted, about hourly.
    workers.push(startRetention(ctx));
    // New dead letters and quarantined entries: logged at error level and sent to ALERT_WEBHOOK_URL.
    workers.push(startAlertWorker(ctx));
  }
  // Queue depths, queue lag, breakers, in-flight and the inbox backlog as OpenTelemetry gauges
  // (a no-op until an SDK is registered; read at each collection, never on the delivery path).
  const unobserveQueues = observePlatformQueues(db);
  const unobserveGauges = observePlatformGauges(db);

  return {
    ...ctx,
    routes,
    authenticate: apiKeyAuthenticator(db, config.ADMIN_TOKEN),
    workers,
    async stop() {
      unobserveQueues();
      unobserveGauges();
      await Promise.allSettled(workers.map((w) => w.stop()));
      if (ownsDb) await db.close();
    },
  };
}

// Where the management routes are, with them: the cloud functions map errors the same way.
export { mapPlatformError } from "./server/management.js";
