/**
 * The local platform as the benchmark's server, in a process of its own so the load generator
 * does not share its event loop. `POST /webhooks/:partner` is the platform's own route, exactly as
 * shipped (group commit included). Beside it, bench-only routes split the cost of an ingest:
 *   POST /bench/noop             reads the body, answers 202 (HTTP alone),
 *   POST /bench/verify/:partner  + signature and JSON checks, stores nothing,
 *   POST /bench/single/:partner  the same `ingest` with one INSERT per request (no group commit),
 *   GET  /bench/cpu              this process's CPU time, to price a request.
 * Prints `{"port":…}` on stdout once listening. Env: BENCH_DB_URL, BENCH_POOL, PARTNERS.
 */
import { loadConfig } from "../../shared/config.js";
import { openDatabase } from "../../shared/db/open.js";
import { ingest } from "../../shared/inbound/ingest.js";
import { screenInbound } from "../../shared/inbound/screen.js";
import { loadPartners } from "../../shared/inbound/verify/index.js";
import { mapPlatformError, startPlatform } from "../../shared/platform.js";
import { createHttpServer, type Route } from "../../shared/server/router.js";
import { createLogger } from "../../shared/telemetry/log.js";

const pool = Number(process.env.BENCH_POOL ?? 10);
const config = loadConfig({ ...process.env, DATABASE_URL: process.env.BENCH_DB_URL, LOG_LEVEL: "warn", PORT: "0" });
const logger = createLogger({ level: "warn" });
const db = await openDatabase({ databaseUrl: config.DATABASE_URL, poolSize: pool });
const platform = await startPlatform(config, { db, workers: false, logger });
const partners = loadPartners(config);
const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

const benchRoutes: Route[] = [
  {
    method: "POST", path: "/bench/noop", auth: "none",
    handler: async (req) => { await req.body(); return { status: 202, headers: JSON_HEADERS, body: { received: true } }; },
  },
  {
    method: "POST", path: "/bench/verify/:partner", auth: "none",
    handler: async (req) => {
      const s = screenInbound(partners, config.MAX_PAYLOAD_BYTES, req.params.partner ?? "", req.headers, await req.body(), new Date());
      return s.ok ? { status: 202, headers: JSON_HEADERS, body: { received: true } } : { status: s.status, body: { error: { code: s.code, message: s.message } } };
    },
  },
  {
    method: "POST", path: "/bench/single/:partner", auth: "none",
    handler: async (req) => {
      const r = await ingest({ db, partners, maxBodyBytes: config.MAX_PAYLOAD_BYTES, logger }, req.params.partner ?? "", req.headers, await req.body());
      return { status: r.status, headers: r.headers, body: r.body };
    },
  },
  { method: "GET", path: "/bench/cpu", auth: "none", handler: async () => ({ status: 200, body: process.cpuUsage() }) },
];

const server = createHttpServer({ routes: [...platform.routes, ...benchRoutes], adminToken: config.ADMIN_TOKEN, maxBodyBytes: config.MAX_PAYLOAD_BYTES, logger, mapError: mapPlatformError });
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  console.log(JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 }));
});
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close();
  void platform.stop().then(() => db.close()).finally(() => process.exit(0));
});
