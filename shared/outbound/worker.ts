/** The relay as a platform background worker (or a scheduled run), configured from the environment. */
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { Database } from "../db/port.js";
import { createRelay, type Relay, type RelayOptions } from "./relay.js";
import { DEFAULT_RETRY_POLICY } from "./retryPolicy.js";
import { createTransport, type Transport } from "./transport.js";
import { instrumentTransport } from "../telemetry/instrument.js";
import { startReencryption } from "../crypto/reencryptWorker.js";
import { createDestinationPolicy } from "./destinationPolicy.js";
import { warnRefusedSubscriptions } from "./refusedDestinations.js";

const allowedDestinations = (config: Config) => config.ALLOWED_DESTINATIONS.split(",").map((s) => s.trim()).filter(Boolean);

/**
 * Builds a relay and its transport from the configuration, without starting it: a cloud timer
 * calls `relay.runOnce()`, the local platform calls `startOutboundRelay`. Close the transport last.
 */
export function createOutboundRelay(
  ctx: { config: Config; db: Database; logger: Logger },
  overrides: { batchSize?: number; shutdownTimeoutMs?: number; onCompleted?: RelayOptions["onCompleted"] } = {},
): { relay: Relay; transport: Transport } {
  const { config, db, logger } = ctx;
  const transport = instrumentTransport(createTransport({
    allowedDestinations: allowedDestinations(config),
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
      openAfterSeconds: config.OUTBOUND_BREAKER_WINDOW_SECONDS,
    },
    batchSize: overrides.batchSize ?? config.OUTBOUND_BATCH_SIZE,
    concurrency: config.OUTBOUND_CONCURRENCY,
    maxInFlight: config.OUTBOUND_MAX_IN_FLIGHT,
    leaseSeconds: config.OUTBOUND_LEASE_SECONDS,
    pollIntervalMs: config.OUTBOUND_POLL_INTERVAL_MS,
    shutdownTimeoutMs: overrides.shutdownTimeoutMs,
    onCompleted: overrides.onCompleted,
  });
  return { relay, transport };
}

/** Starts one relay loop; `stop` finishes in-flight attempts, then closes the connection pool. */
export async function startOutboundRelay(ctx: { config: Config; db: Database; logger: Logger }): Promise<{ name: string; relay: Relay; stop(): Promise<void> }> {
  const { relay, transport } = createOutboundRelay(ctx);
  // Said at start rather than found in the dead letters: subscriptions this policy refuses.
  await warnRefusedSubscriptions(ctx.db, createDestinationPolicy({ allowed: allowedDestinations(ctx.config) }), ctx.logger);
  await relay.start();
  // Secrets not yet under the first key of ENCRYPTION_KEYS (plaintext rows, a rotation) are rewritten meanwhile.
  const reencryption = startReencryption(ctx.db, ctx.logger.child({ worker: "secrets-reencryption" }));
  return {
    name: relay.name,
    relay,
    async stop() {
      await reencryption.stop();
      await relay.stop();
      await transport.close();
    },
  };
}
