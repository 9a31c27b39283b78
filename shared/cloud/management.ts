/**
 * The management API as a cloud function serves it: the routes of shared/server/management.ts
 * behind the Node-free core, built once per instance from the function's database, tuning and
 * admin token. The per-cloud entries (functions/<cloud>/management.ts) only translate their
 * platform's request into a `RawRequest` and the answer back.
 *
 * Never an open API: without an admin token (the secret store's value missing, unreadable, or
 * shorter than 16 characters) every request is refused with 503 `not_configured`, and the reason
 * is logged; the token is asked for on every request (the runtimes cache it), so a token put in
 * later, or rotated, is used without a redeploy.
 *
 * Deliveries: "send event", "replay", "resume"… write to the outbox, committed before the answer;
 * the cloud relay runs on its schedule and delivers them at its next run (`wakeRelay` can start it
 * sooner where the host has a way).
 */
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { Database } from "../db/port.js";
import type { Authenticator } from "../server/auth.js";
import { createApp, errorResponse, HttpError, type App, type RawRequest, type Response } from "../server/core.js";
import { managementRoutes, mapPlatformError } from "../server/management.js";
import { createLogger } from "../telemetry/log.js";
import { repeatedFailures } from "../telemetry/repeatedFailures.js";
import { apiKeyAuthenticator } from "../tenancy/authenticate.js";
import { once } from "./once.js";

/** The shortest admin token accepted, as locally (shared/config.ts). */
export const MIN_ADMIN_TOKEN_LENGTH = 16;
/** Seconds a caller is told to wait when the database cannot be opened yet. */
export const NOT_READY_RETRY_AFTER_SECONDS = 5;
/** The default body limit of the management functions (the platforms' own caps are lower on AWS). */
export const DEFAULT_MANAGEMENT_BODY_BYTES = 1024 * 1024;

export interface ManagementHostOptions {
  /** The function's tuning (shared/config.ts): MAX_PAYLOAD_BYTES, ALLOWED_DESTINATIONS… */
  tuning: Config;
  logger: Logger;
  database(): Promise<Database>;
  /** The admin token from the cloud's secret store; undefined when none is configured. May throw (unreadable). */
  adminToken(): Promise<string | undefined>;
  /** The setting that names the token, for the log and the 503 (e.g. `WEBHOOKS_ADMIN_TOKEN_SECRET_ARN`). */
  tokenSetting: string;
  /** Run once before the first request is served (e.g. installing the encryption keys). */
  prepare?(): Promise<void>;
  /** Largest request body; a larger one is a 413 in the API's shape. */
  maxBodyBytes: number;
  /** Starts the relay early after an operation that made deliveries due (absent: the schedule delivers). */
  wakeRelay?: () => Promise<void>;
  /** Who a request acts for, given the database and the admin token. Default: the admin token or an API key, as locally. */
  authenticator?: (db: Database, adminToken: string) => Authenticator;
}

export interface ManagementHost {
  /** The answer to one request; never throws. */
  handle(request: RawRequest): Promise<Response>;
}

/** The answer of a function that has no usable admin token. */
function notConfigured(tokenSetting: string): Response {
  return errorResponse(new HttpError(503, "not_configured",
    `The management API is not configured: it has no admin token (${tokenSetting}), so it refuses every request. The deploy puts the token in the cloud's secret store (docs/deploy.md).`));
}

function notReady(): Response {
  return errorResponse(new HttpError(503, "not_ready", "The management API is not ready (its database cannot be reached); retry later.", undefined,
    { "retry-after": String(NOT_READY_RETRY_AFTER_SECONDS) }));
}

/**
 * The answer when the function's runtime cannot even be made (a setting the stack got wrong): the
 * reason goes to the log, the caller gets a sentence, never the error.
 */
export function invalidSettings(error: unknown): Response {
  createLogger({ name: "webhooks-management", level: "info" }).error({ err: error }, "the management function cannot start: its settings are invalid");
  return errorResponse(new HttpError(503, "not_configured", "The management function's settings are invalid; the function's log says which."));
}

export function createManagementHost(options: ManagementHostOptions): ManagementHost {
  const { logger } = options;
  const failures = repeatedFailures(logger);
  let auth: { token: string; authenticate: Authenticator } | undefined;

  const app = once(async (): Promise<{ app: App; db: Database }> => {
    const db = await options.database();
    await options.prepare?.();
    const routes = managementRoutes({ config: options.tuning, db, logger, wakeRelay: options.wakeRelay });
    return {
      db,
      app: createApp({
        routes,
        adminToken: "",
        // The token of this request (see handle); an empty one matches nothing.
        authenticate: (headers, request) => auth?.authenticate(headers, request),
        maxBodyBytes: options.maxBodyBytes,
        logger,
        mapError: mapPlatformError,
      }),
    };
  });

  async function token(): Promise<string | undefined> {
    try {
      const value = (await options.adminToken())?.trim();
      if (!value) {
        failures.record("management:no-token", "error", { setting: options.tokenSetting }, `the management API refuses every request: ${options.tokenSetting} gives no admin token; set it (docs/deploy.md)`);
        return undefined;
      }
      if (value.length < MIN_ADMIN_TOKEN_LENGTH) {
        failures.record("management:short-token", "error", { setting: options.tokenSetting, length: value.length }, `the management API refuses every request: the admin token of ${options.tokenSetting} is shorter than ${MIN_ADMIN_TOKEN_LENGTH} characters; put a longer one in the secret store`);
        return undefined;
      }
      return value;
    } catch (error) {
      failures.record("management:token-unreadable", "error", { err: error, setting: options.tokenSetting }, `the management API refuses every request: the admin token (${options.tokenSetting}) cannot be read`);
      return undefined;
    }
  }

  return {
    async handle(request) {
      const adminToken = await token();
      if (!adminToken) return notConfigured(options.tokenSetting);
      let built;
      try {
        built = await app();
      } catch (error) {
        failures.record("management:not-ready", "error", { err: error }, "the management API cannot start: database or keys unavailable");
        return notReady();
      }
      if (auth?.token !== adminToken) {
        auth = { token: adminToken, authenticate: (options.authenticator ?? apiKeyAuthenticator)(built.db, adminToken) };
      }
      return built.app.handle(request);
    },
  };
}

/** What a cloud runtime (functions/<cloud>/runtime.ts) gives the management host. */
export interface ManagementRuntime {
  tuning: Config;
  logger: Logger;
  database(): Promise<Database>;
  adminToken(): Promise<string | undefined>;
  /** Installs the subscription-secret keys (issue 17), where the runtime has them. */
  encryptionKeys?(): Promise<unknown>;
}

const hosts = new WeakMap<ManagementRuntime, ManagementHost>();

/**
 * The management host of a function instance's runtime, made on its first request. The body
 * limit: MAX_PAYLOAD_BYTES or 1 MiB, whichever is larger, within what the platform carries (`cap`).
 */
export function managementHostFor(runtime: ManagementRuntime, options: { tokenSetting: string; cap: number; wakeRelay?: () => Promise<void> }): ManagementHost {
  let host = hosts.get(runtime);
  if (!host) {
    host = createManagementHost({
      tuning: runtime.tuning,
      logger: runtime.logger,
      database: () => runtime.database(),
      adminToken: () => runtime.adminToken(),
      prepare: runtime.encryptionKeys ? async () => { await runtime.encryptionKeys!(); } : undefined,
      tokenSetting: options.tokenSetting,
      maxBodyBytes: Math.min(options.cap, Math.max(runtime.tuning.MAX_PAYLOAD_BYTES, DEFAULT_MANAGEMENT_BODY_BYTES)),
      wakeRelay: options.wakeRelay,
    });
    hosts.set(runtime, host);
  }
  return host;
}
