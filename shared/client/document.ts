/**
 * The management API's OpenAPI document, built in this process as the local platform serves it at
 * `GET /openapi.json` (every route it mounts, the inbound webhook route and `/metrics` included),
 * without a server or a database: the client is generated from it (./generate.ts) and the drift
 * test compares against it (test/operator/client.test.ts).
 *
 * Building the routes reads nothing: a route touches the database only when it handles a request,
 * and the document's handler touches none. The stand-in database says so if that ever changes.
 */
import { pino } from "pino";
import { loadConfig } from "../config.js";
import type { Database } from "../db/port.js";
import { managementRoutes } from "../server/management.js";
import { webhookRoute } from "../server/routes/inbound.js";
import { metricsRoute } from "../server/routes/metrics.js";

function noDatabase(): never {
  throw new Error("Building the OpenAPI document tried to use the database; the document must be built from the routes alone.");
}

const unused: Database = {
  kind: "pglite",
  query: async () => noDatabase(),
  transaction: async () => noDatabase(),
  listen: async () => noDatabase(),
  close: async () => {},
};

/** The document the local platform serves at its root (`servers: [{ url: "/" }]`). */
export async function managementDocument(): Promise<Record<string, unknown>> {
  const config = loadConfig({ ADMIN_TOKEN: "x".repeat(32) });
  const ctx = { config, db: unused, logger: pino({ level: "silent" }) };
  const routes = managementRoutes(ctx, { ingest: webhookRoute(ctx), metrics: metricsRoute(undefined) });
  const served = routes.find((r) => r.method === "GET" && r.path === "/openapi.json");
  if (!served) throw new Error("The management routes have no GET /openapi.json.");
  const answer = await served.handler({ basePath: "" } as Parameters<typeof served.handler>[0]);
  return answer.body as Record<string, unknown>;
}
