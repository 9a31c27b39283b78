/** The relay as a platform background worker (or a scheduled run), configured from the environment. */
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { Database } from "../db/port.js";
import { createRelay, type Relay } from "./relay.js";
import { DEFAULT_RETRY_POLICY } from "./retryPolicy.js";
import { createTransport, type Transport } from "./transport.js";
import { instrumentTransport } from "../telemetry/instrument.js";
import { runPeriodically, type PeriodicJob } from "../periodic.js";
import { purgeIfDue, type RetentionPolicy } from "./retention.js";

/**
 * Builds a relay and its transport from the configuration, without starting it: a cloud timer
 * calls `relay.runOnce()`, the local platform calls `startOutboundRelay`. Close the transport last.
 */
export function createOutboundRelay(ctx: { config: Config; db: Database; logger: Logger }): { relay: Relay; transport: Transport } {
  const { config, db, logger } = ctx;
  // A held delivery may wait for up to concurrency ÷ 64 HTTP turns (the relay's default HTTP
  // concurrency), each as long as the attempt timeout, before its own attempt ends.
  const worstHoldMs = Math.ceil(config.OUTBOUND_CONCURRENCY / 64) * config.OUTBOUND_TIMEOUT_MS;
  if (config.OUTBOUND_LEASE_SECONDS * 1000 <= worstHoldMs) {
    logger.warn(
      { leaseSeconds: config.OUTBOUND_LEASE_SECONDS, worstHoldSeconds: worstHoldMs / 1000 },
      "OUTBOUND_LEASE_SECONDS should exceed OUTBOUND_CONCURRENCY ÷ 64 × OUTBOUND_TIMEOUT_MS, or a slow attempt may be sent twice",
    );
  }
  const transport = instrumentTransport(createTransport({
    allowedDestinations: config.ALLOWED_DESTINATIONS.split(",").map((s) => s.trim()).filter(Boolean),
    timeoutMs: config.OUTBOUND_TIMEOUT_MS,
  }));
  const relay = createRelay({
    db,
    transport,
    logger: logger.child({ worker: "outbound-relay" }),
    retryPolicy: { ...DEFAULT_RETRY_POLICY, maxAttempts: config.OUTBOUND_MAX_ATTEMPTS },
    healthPolicy: {
      degradeAfter: config.OUTBOUND_DEGRADE_AFTER,
      disableAfter: config.OUTBOUND_DISABLE_AFTER,
      probeIntervalSeconds: config.OUTBOUND_PROBE_INTERVAL_SECONDS,
    },
    batchSize: config.OUTBOUND_BATCH_SIZE,
    concurrency: config.OUTBOUND_CONCURRENCY,
    leaseSeconds: config.OUTBOUND_LEASE_SECONDS,
    pollIntervalMs: config.OUTBOUND_POLL_INTERVAL_MS,
  });
  return { relay, transport };
}

/** Starts one relay loop; `stop` finishes in-flight attempts, then closes the connection pool. */
export async function startOutboundRelay(ctx: { config: Config; db: Database; logger: Logger }): Promise<{ name: string; relay: Relay; stop(): Promise<void> }> {
  const { relay, transport } = createOutboundRelay(ctx);
  await relay.start();
  return {
    name: relay.name,
    relay,
    async stop() {
      await relay.stop();
      await transport.close();
    },
  };
}

/**
 * Deletes finished outbound work past its retention (OUTBOUND_RETENTION_DAYS,
 * OUTBOUND_DEAD_LETTER_RETENTION_DAYS). It wakes a minute after start (a start is never slowed),
 * then every five minutes, and runs when this database's last retention run is an hour old, so one
 * run an hour happens whatever the number of platform instances. With both at 0 it does nothing.
 */
export function startOutboundRetention(
  ctx: { config: Config; db: Database; logger: Logger },
  options: { intervalMs?: number; firstDelayMs?: number; everySeconds?: number; batchSize?: number } = {},
): PeriodicJob {
  const logger = ctx.logger.child({ worker: "outbound-retention" });
  const policy = retentionPolicy(ctx.config);
  return runPeriodically("outbound-retention", async (shouldStop) => {
    const purged = await purgeIfDue(ctx.db, policy, { batchSize: options.batchSize, everySeconds: options.everySeconds, shouldStop, pauseMs: 10 });
    if (purged && purged.deliveries + purged.events > 0) logger.info({ ...purged, policy }, "purged outbound deliveries and events past their retention");
  }, {
    intervalMs: options.intervalMs ?? 300_000,
    firstDelayMs: options.firstDelayMs ?? 60_000,
    onError: (error) => logger.warn({ err: { type: (error as Error)?.name, message: (error as Error)?.message } }, "retention run failed; retrying at the next interval"),
  });
}

/** The retention the configuration asks for (OUTBOUND_RETENTION_DAYS, OUTBOUND_DEAD_LETTER_RETENTION_DAYS). */
export const retentionPolicy = (config: Config): RetentionPolicy => ({
  deliveredDays: config.OUTBOUND_RETENTION_DAYS,
  deadDays: config.OUTBOUND_DEAD_LETTER_RETENTION_DAYS,
});
