/**
 * The platform in-process for operator tests: real routes, real workers, a real HTTP server on a
 * free port, a test receiver whose answers the test controls, and helpers that wait on the API.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { fileURLToPath } from "node:url";
import type { Writable } from "node:stream";
import { afterAll, beforeAll } from "vitest";
import { loadConfig, type Config } from "../../shared/config.js";
import type { Database } from "../../shared/db/port.js";
import { mapPlatformError, startPlatform, type Platform } from "../../shared/platform.js";
import { createHttpServer } from "../../shared/server/router.js";
import { instrumentRoutes } from "../../shared/telemetry/instrument.js";
import { createLogger } from "../../shared/telemetry/log.js";
import type { Telemetry } from "../../shared/telemetry/sdk.js";
import { openTestDatabase } from "../support/databases.js";

export const TEST_TOKEN = "operator-test-token-0123456789";

export interface TestPlatform {
  baseUrl: string;
  token: string;
  config: Config;
  platform: Platform;
  /** Every request the server received (method and path, query left out), in order. */
  requests: { method: string; path: string }[];
  /** The requests among `requests` that match no operation of /openapi.json (the admin page's own files aside). */
  undocumentedRequests(): Promise<string[]>;
  /** Authenticated JSON call to the management API; throws with the body on a non-2xx. */
  api<T = any>(method: "GET" | "POST" | "PATCH" | "DELETE", path: string, body?: unknown): Promise<T>;
  stop(): Promise<void>;
}

/** Starts the platform on `db` with `env` laid over test defaults. */
export async function startTestPlatform(db: Database, env: Record<string, string> = {}, options: { logStream?: Writable; workers?: boolean; instrument?: boolean; telemetry?: Telemetry } = {}): Promise<TestPlatform> {
  const config = loadConfig({
    ADMIN_TOKEN: TEST_TOKEN,
    LOG_LEVEL: options.logStream ? "trace" : "silent",
    ALLOWED_DESTINATIONS: "127.0.0.1",
    OUTBOUND_POLL_INTERVAL_MS: "100",
    INBOX_POLL_MS: "100",
    // The example order domain, loaded as a user's handler module is.
    INBOUND_HANDLERS: fileURLToPath(new URL("../../examples/orders/handlers.ts", import.meta.url)),
    ...env,
  });
  const logger = createLogger({ level: config.LOG_LEVEL, destination: options.logStream });
  const platform = await startPlatform(config, { db, logger, workers: options.workers, telemetry: options.telemetry });
  const routes = options.instrument ? instrumentRoutes(platform.routes) : platform.routes;
  const server: Server = createHttpServer({ routes, adminToken: config.ADMIN_TOKEN, authenticate: platform.authenticate, maxBodyBytes: config.MAX_PAYLOAD_BYTES, logger, mapError: mapPlatformError });
  const requests: { method: string; path: string }[] = [];
  server.on("request", (req) => requests.push({ method: req.method ?? "GET", path: (req.url ?? "/").split("?")[0]! }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    baseUrl,
    token: config.ADMIN_TOKEN,
    config,
    platform,
    requests,
    async undocumentedRequests() {
      const doc = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
      const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => ({
        method: m.toUpperCase(),
        pattern: new RegExp(`^${path.replace(/\{\w+\}/g, "[^/]+")}$`),
      })));
      const asset = /^\/admin(\/[^/]+)?$/;
      return [...new Set(requests
        .filter((r) => !(r.method === "GET" && asset.test(r.path)))
        .filter((r) => !operations.some((o) => (o.method === r.method || (r.method === "HEAD" && o.method === "GET")) && o.pattern.test(r.path)))
        .map((r) => `${r.method} ${r.path}`))];
    },
    async api(method, path, body) {
      const res = await fetch(baseUrl + path, {
        method,
        headers: { authorization: `Bearer ${config.ADMIN_TOKEN}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await platform.stop();
    },
  };
}

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

export interface TestReceiver {
  url: string;
  received: ReceivedRequest[];
  /** Status answered from now on (default 200); a function decides per request. */
  answer: number | ((req: { path: string; attempt: number; id: string }) => number);
  close(): Promise<void>;
}

export async function startTestReceiver(): Promise<TestReceiver> {
  const attempts = new Map<string, number>();
  const receiver: TestReceiver = {
    url: "",
    received: [],
    answer: 200,
    close: async () => {},
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const id = String(req.headers["webhook-id"] ?? "");
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      const path = req.url ?? "/";
      const status = typeof receiver.answer === "function" ? receiver.answer({ path, attempt, id }) : receiver.answer;
      receiver.received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), status });
      res.writeHead(status, { "content-type": "text/plain" }).end(status < 300 ? "ok" : "nope");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  receiver.url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  receiver.close = () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
  return receiver;
}

/** Polls `check` until it returns a truthy value; fails with `what` after `timeoutMs`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined | null | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Creates a subscription to `url` and one event for it; resolves to the delivery id once it is dead. */
export async function makeDeadLetter(t: TestPlatform, url: string, tag: string): Promise<{ deliveryId: string; subscriptionId: string; secret: string }> {
  // A type of its own, so this event reaches this subscription only.
  const type = `test.${tag.toLowerCase().replace(/[^a-z0-9]/g, "_")}`;
  const sub = await t.api("POST", "/subscriptions", { url, eventTypes: [type], maxAttempts: 1, description: tag });
  const event = await t.api("POST", "/events", { id: `evt-${tag}`, type, data: { tag } });
  const deliveryId: string = event.deliveries[0].id;
  await eventually(`${deliveryId} to be dead`, async () => (await t.api("GET", `/deliveries/${encodeURIComponent(deliveryId)}`)).status === "dead");
  return { deliveryId, subscriptionId: sub.id, secret: sub.secrets[0] };
}

/**
 * For a suite: a test receiver and the platform on `db`, started before its tests and stopped
 * after them; `use` receives them once started.
 */
export function usePlatformAndReceiver(db: () => Database, use: (platform: TestPlatform, receiver: TestReceiver) => void): void {
  let platform: TestPlatform | undefined;
  let receiver: TestReceiver | undefined;
  beforeAll(async () => {
    receiver = await startTestReceiver();
    platform = await startTestPlatform(db());
    use(platform, receiver);
  }, 180_000);
  afterAll(async () => {
    await platform?.stop();
    await receiver?.close();
  });
}

/**
 * For a file that needs no second backend: a fresh embedded database of its own, and on it the
 * platform and receiver of `usePlatformAndReceiver`; the database is closed after them.
 */
export function usePlatformOnOwnDatabase(use: (platform: TestPlatform, receiver: TestReceiver) => void): void {
  let opened: Awaited<ReturnType<typeof openTestDatabase>> | undefined;
  beforeAll(async () => { opened = await openTestDatabase("pglite"); }, 180_000);
  // Registered before the platform's: after-hooks run in reverse, so the platform stops first.
  afterAll(async () => { await opened?.close(); });
  usePlatformAndReceiver(() => opened!.db, use);
}
