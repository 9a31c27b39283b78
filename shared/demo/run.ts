/**
 * `npm run demo`: the whole platform plus a sample partner and sample receivers, so a newcomer
 * sees in well under a minute: signed inbound webhooks accepted (duplicates and out-of-order events
 * deferred and resolved), outbound deliveries retried with backoff, one endpoint failing into dead
 * letters (with alerts), and a replay that succeeds. The server keeps running afterwards so the
 * admin page and the CLI can be tried on the result.
 *
 * Demo-only settings: an in-memory database (unless DATABASE_URL or DATA_DIR is set), the SSRF
 * allow-list opened for 127.0.0.1, a 1 s deferral delay, fast polling, and a maximum of 2 attempts
 * on the broken endpoint's subscription, and the example order handlers (examples/orders) as
 * INBOUND_HANDLERS unless it is set. Nothing else differs from `npm start`.
 */
import type { Server } from "node:http";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { loadConfig, type Config } from "../config.js";
import type { Database } from "../db/port.js";
import { startAlertWorker } from "../alerts.js";
import { generateSecret } from "../outbound/signature.js";
import { mapPlatformError, startPlatform, type Platform } from "../platform.js";
import { createHttpServer } from "../server/router.js";
import type { Logger } from "../telemetry/log.js";
import { DEMO_PARTNER, runPartner } from "./partner.js";
import { startDemoReceiver, type DemoReceiver } from "./receiver.js";
import { formatSummary, runScenario, type DemoSummary } from "./scenario.js";
import { listen } from "../server/listen.js";

export interface DemoOptions {
  /** The environment the configuration is read from; demo settings are laid over it. */
  env?: Record<string, string | undefined>;
  /** Use this database (tests). */
  db?: Database;
  logger?: Logger;
  /** Progress lines. Default: none. */
  log?: (line: string) => void;
  /** Upper bound on each wait of the scenario. Default: 45 000 ms. */
  timeoutMs?: number;
}

export interface DemoRun {
  summary: DemoSummary;
  config: Config;
  platform: Platform;
  server: Server;
  receiver: DemoReceiver;
  baseUrl: string;
  /** Stops the server, the platform and the receivers. */
  stop(): Promise<void>;
}

/** The settings the demo lays over the environment. */
export function demoSettings(env: Record<string, string | undefined>, receiver: DemoReceiver, secrets: { partner: string; alerts: string }): Record<string, string> {
  return {
    ...(env.DATABASE_URL || env.DATA_DIR ? {} : { DATA_DIR: "memory://" }),
    ALLOWED_DESTINATIONS: "127.0.0.1",
    PARTNERS: JSON.stringify({ [DEMO_PARTNER]: { scheme: "standard-webhooks", secrets: [secrets.partner] } }),
    // The sample order domain, loaded as a user's handler module is (never imported by the core).
    INBOUND_HANDLERS: env.INBOUND_HANDLERS ?? fileURLToPath(new URL("../../examples/orders/handlers.ts", import.meta.url)),
    INBOX_DEFER_DELAY_SECONDS: "1",
    INBOX_POLL_MS: "200",
    OUTBOUND_POLL_INTERVAL_MS: "200",
    ALERT_WEBHOOK_URL: `${receiver.url}/alerts`,
    ALERT_WEBHOOK_SECRET: secrets.alerts,
  };
}

/** Starts everything, runs the scenario, returns the summary with the platform still running. */
export async function runDemo(options: DemoOptions = {}): Promise<DemoRun> {
  const env = options.env ?? process.env;
  const receiver = await startDemoReceiver();
  const secrets = { partner: generateSecret(), alerts: generateSecret() };
  receiver.setSecret("alerts", secrets.alerts);
  let platform: Platform | undefined;
  let server: Server | undefined;
  const stop = async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await platform?.stop();
    await receiver.close();
  };
  try {
    const config = loadConfig({ ...env, ...demoSettings(env, receiver, secrets) });
    platform = await startPlatform(config, { db: options.db, logger: options.logger });
    // The alert poller belongs to every platform; if this one does not run it yet, the demo does.
    if (!platform.workers.some((w) => w.name === "alerts")) platform.workers.push(startAlertWorker(platform, { intervalMs: 1000 }));
    server = createHttpServer({ routes: platform.routes, adminToken: config.ADMIN_TOKEN, authenticate: platform.authenticate, maxBodyBytes: Math.max(config.MAX_PAYLOAD_BYTES, config.MAX_INBOUND_BODY_BYTES), logger: platform.logger, mapError: mapPlatformError });
    const s = server;
    await listen(s, config.PORT);
    const address = server.address();
    const baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : config.PORT}`;
    const runId = `demo-${randomBytes(3).toString("hex")}`;
    const summary = await runScenario({
      baseUrl,
      token: config.ADMIN_TOKEN,
      receiver,
      runId,
      log: options.log ?? (() => {}),
      timeoutMs: options.timeoutMs ?? 45_000,
      partner: (pauseMs) => runPartner(baseUrl, secrets.partner, runId, { pauseMs }),
    });
    return { summary, config, platform, server, receiver, baseUrl, stop };
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
}

/** `npm run demo`: run, print, keep serving until Ctrl-C. */
export async function main(): Promise<void> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out("multicloud-webhooks demo: starting the platform, a sample partner and sample receivers…");
  const run = await runDemo({ log: (line) => out(`  · ${line}`), env: { ...process.env, PORT: process.env.PORT ?? "8080", LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" } });
  out("");
  out(formatSummary(run.summary, { adminUrl: `${run.baseUrl}/admin`, token: run.config.ADMIN_TOKEN, baseUrl: run.baseUrl }));
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    await run.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown());
  process.on("SIGTERM", () => void shutdown());
}
