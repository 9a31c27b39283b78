import type { Config } from "../config.js";
import type { Database } from "../db/port.js";
import { createOutboundRelay } from "../outbound/worker.js";
import type { Relay } from "../outbound/relay.js";
import type { Logger } from "../telemetry/log.js";

/** A relay for one scheduled run (not started: the caller drives `runOnce`); `close` frees its connection pool. */
export function relayFor(db: Database, config: Config, logger: Logger): { relay: Relay; close(): Promise<void> } {
  const { relay, transport } = createOutboundRelay({ db, config, logger });
  return { relay, close: () => transport.close() };
}
