/**
 * The local platform as the benchmark's server, in a process of its own so the load generator
 * does not share its event loop. Beside the platform's routes it mounts three bench-only ones that
 * split the cost of an ingest:
 *   POST /bench/noop              reads the body, answers 202 (HTTP alone),
 *   POST /bench/verify/:partner   + signature and JSON checks, stores nothing,
 *   POST /bench/grouped/:partner  the ingest path with group commit (shared/inbound/groupCommit.ts),
 *   GET  /bench/cpu               this process's CPU time, to price a request.
 * Prints `{"port":…}` on stdout once listening. Env: BENCH_DB_URL, BENCH_POOL, PARTNERS,
 * BENCH_GROUP_IN_FLIGHT (default: half the pool).
 */
import { loadConfig } from "../../shared/config.js";
import { openDatabase } from "../../shared/db/open.js";
import { createGroupCommit } from "../../shared/inbound/groupCommit.js";
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
const grouped = createGroupCommit(db, { maxInFlight: Number(process.env.BENCH_GROUP_IN_FLIGHT ?? Math.max(1, Math.floor(pool / 2))) });
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
    method: "POST", path: "/bench/grouped/:partner", auth: "none",
    handler: async (req) => {
      const raw = await req.body();
      const now = new Date();
      const s = screenInbound(partners, config.MAX_PAYLOAD_BYTES, req.params.partner ?? "", req.headers, raw, now);
      if (!s.ok) return { status: s.status, body: { error: { code: s.code, message: s.message } } };
      try {
        const r = await grouped.store({ partnerName: s.partner.name, partnerEventId: s.eventId, eventType: s.eventType, payload: raw, signatureVerified: true, receivedAt: now });
        return { status: r.kind === "stored" ? 202 : 200, headers: JSON_HEADERS, body: { received: true, inboxId: r.id, duplicate: r.kind !== "stored" } };
      } catch {
        return { status: 503, headers: { ...JSON_HEADERS, "retry-after": "5" }, body: { error: { code: "database_unavailable", message: "Not stored; retry later." } } };
      }
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
