/**
 * `npm start`: the whole platform on one machine, on the embedded database unless DATABASE_URL
 * is set. `npm run demo` (or `--demo`) also runs a sample partner and a flaky receiver.
 */
import { ConfigError, loadConfig } from "../config.js";
import { mapPlatformError, startPlatform } from "../platform.js";
import { listen, StartError } from "./listen.js";
import { createHttpServer } from "./router.js";
import { localAdminToken, type LocalAdminToken } from "./localAdminToken.js";
import { startTelemetryFromEnv } from "../telemetry/sdk.js";
import { describeTelemetry, TelemetryConfigError } from "../telemetry/settings.js";

/**
 * The banner's token lines. The token is shown in full only when this start generated it; a kept
 * one (`<DATA_DIR>.admin-token`) is named by its file, one set by ADMIN_TOKEN by the setting.
 */
function tokenLines(token: string, kept: LocalAdminToken | undefined): { shown: string; cli: string } {
  if (!kept) return { shown: `${token.slice(0, 4)}… (ADMIN_TOKEN, as set)`, cli: "<your ADMIN_TOKEN>" };
  if (!kept.file) return { shown: `${token}  (generated for this run: it changes at every start; set ADMIN_TOKEN to keep one)`, cli: token };
  if (kept.generated) return { shown: `${token}  (generated, kept in ${kept.file} for the next starts; set ADMIN_TOKEN to choose one)`, cli: token };
  return { shown: `${token.slice(0, 4)}… (the same as before: kept in ${kept.file}; \`cat\` it to see it)`, cli: `"$(cat ${kept.file})"` };
}

async function main(): Promise<void> {
  if (process.argv.includes("--demo")) {
    // The demo lays its own settings over the environment and prints its own summary.
    const demo = await import("../demo/run.js");
    return demo.main();
  }
  const loaded = loadConfig();
  // Without ADMIN_TOKEN, the embedded database keeps its generated token beside it, as its key.
  const kept = loaded.adminTokenGenerated ? await localAdminToken(loaded) : undefined;
  const config = kept ? { ...loaded, ADMIN_TOKEN: kept.token } : loaded;
  // The OpenTelemetry SDK, only when OTEL_* variables ask for it (docs/operations.md); before the
  // platform, so its instruments and gauges are created on the installed providers.
  const telemetry = await startTelemetryFromEnv(process.env);
  const platform = await startPlatform(config, { telemetry });
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
    await telemetry?.shutdown();
    throw error;
  }
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.PORT;
  const base = `http://127.0.0.1:${port}`;
  const token = tokenLines(config.ADMIN_TOKEN, kept);
  // One block, after the log lines of the start are out (the logger writes asynchronously): a log
  // line never lands between the banner's lines.
  await new Promise<void>((resolve) => platform.logger.flush(() => resolve()));
  process.stdout.write([
    `multicloud-webhooks is running at ${base} on ${platform.db.kind === "pglite" ? `the embedded database (${config.DATA_DIR})` : "PostgreSQL"}`,
    `  admin page:   ${base}/admin`,
    `  admin token:  ${token.shown}`,
    `  CLI:          WEBHOOKS_URL=${base} ADMIN_TOKEN=${token.cli} npx webhooks --help`,
    // Only when OTEL_* variables turned it on: a start without them prints what it always did.
    ...(telemetry ? [`  telemetry:    ${describeTelemetry(telemetry.settings)}`] : []),
  ].join("\n") + "\n");

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    platform.logger.info({ signal }, "shutting down: finishing in-flight work");
    server.close();
    await platform.stop();
    // What is buffered (spans of the last seconds, the last metric interval) goes out before exit.
    await telemetry?.shutdown();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof StartError || error instanceof TelemetryConfigError) console.error(error.message);
  else console.error(`Could not start: ${(error as Error).message}`);
  process.exit(1);
});
