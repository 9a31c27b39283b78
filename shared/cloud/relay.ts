import type { Config } from "../config.js";
import type { Database } from "../db/port.js";
import { createOutboundRelay } from "../outbound/worker.js";
import { purgeIfDue, type RetentionResult } from "../retention/run.js";
import { retentionPolicy } from "../retention/policy.js";
import { DEFAULT_HTTP_CONCURRENCY, type Relay } from "../outbound/relay.js";
import type { Logger } from "../telemetry/log.js";

/**
 * A relay for one scheduled run (not started: the caller drives `runOnce`), and the retention pass
 * the same run makes when one is due (about hourly, shared by all runs through the database);
 * `close` frees the relay's connection pool.
 *
 * A scheduled pass claims at most one HTTP turn's worth (64), so it lasts at most one attempt
 * timeout plus a claim and a write: `passReserveMs`, the time the drain keeps for a pass, then
 * holds, and the platform never cuts a pass short (its leases would hold the deliveries up until
 * they run out). Bigger claims would save little: a pass's turns run one after the other.
 */
export function relayFor(db: Database, config: Config, logger: Logger): {
  relay: Relay;
  purge(shouldStop: () => boolean): Promise<RetentionResult | null>;
  passReserveMs: number;
  close(): Promise<void>;
} {
  const { relay, transport } = createOutboundRelay({ db, config, logger }, { batchSize: Math.min(config.OUTBOUND_BATCH_SIZE, DEFAULT_HTTP_CONCURRENCY) });
  const policy = retentionPolicy(config);
  return {
    relay,
    purge: (shouldStop) => purgeIfDue(db, policy, { shouldStop }),
    passReserveMs: config.OUTBOUND_TIMEOUT_MS + 5_000,
    close: () => transport.close(),
  };
}
