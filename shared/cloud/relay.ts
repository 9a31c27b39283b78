import type { Config } from "../config.js";
import type { Database } from "../db/port.js";
import { createOutboundRelay } from "../outbound/worker.js";
import { purgeIfDue, type RetentionResult } from "../retention/run.js";
import { retentionPolicy } from "../retention/policy.js";
import type { Relay } from "../outbound/relay.js";
import type { Logger } from "../telemetry/log.js";

/**
 * A relay for one scheduled run (not started: the caller drives `runOnce`), and the retention pass
 * the same run makes when one is due (about hourly, shared by all runs through the database);
 * `close` frees the relay's connection pool.
 */
export function relayFor(db: Database, config: Config, logger: Logger): { relay: Relay; purge(shouldStop: () => boolean): Promise<RetentionResult | null>; close(): Promise<void> } {
  const { relay, transport } = createOutboundRelay({ db, config, logger });
  const policy = retentionPolicy(config);
  return { relay, purge: (shouldStop) => purgeIfDue(db, policy, { shouldStop }), close: () => transport.close() };
}
