/**
 * `npm start`: the whole platform on one machine, on the embedded database unless DATABASE_URL
 * is set. `npm run demo` (or `--demo`) also runs a sample partner and a flaky receiver.
 */
import { ConfigError, loadConfig } from "../config.js";
import { mapPlatformError, startPlatform } from "../platform.js";
import { listen, StartError } from "./listen.js";
import { createHttpServer } from "./router.js";

async function main(): Promise<void> {
  if (process.argv.includes("--demo")) {
    // The demo lays its own settings over the environment and prints its own summary.
    const demo = await import("../demo/run.js");
    return demo.main();
  }
  const config = loadConfig();
  const platform = await startPlatform(config);
  const server = createHttpServer({
    routes: platform.routes,
    adminToken: config.ADMIN_TOKEN,
    // ADMIN_TOKEN or an API key (docs/tenancy.md).
    authenticate: platform.authenticate,
    maxBodyBytes: Math.max(config.MAX_PAYLOAD_BYTES, config.MAX_INBOUND_BODY_BYTES),
    logger: platform.logger,
    mapError: mapPlatformError,
  });
  try {
    await listen(server, config.PORT);
  } catch (error) {
    await platform.stop();
    throw error;
  }
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.PORT;
  const base = `http://127.0.0.1:${port}`;
  console.log(`multicloud-webhooks is running at ${base} on ${platform.db.kind === "pglite" ? `the embedded database (${config.DATA_DIR})` : "PostgreSQL"}`);
  console.log(`  admin page:   ${base}/admin`);
  console.log(`  admin token:  ${config.ADMIN_TOKEN}${config.adminTokenGenerated ? "  (generated; set ADMIN_TOKEN to keep one)" : ""}`);
  console.log(`  CLI:          WEBHOOKS_URL=${base} ADMIN_TOKEN=${config.ADMIN_TOKEN} npx webhooks --help`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    platform.logger.info({ signal }, "shutting down: finishing in-flight work");
    server.close();
    await platform.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof StartError) console.error(error.message);
  else console.error(`Could not start: ${(error as Error).message}`);
  process.exit(1);
});
