import type { Config } from "../config.js";
import type { Database } from "../db/port.js";
import type { InboxProcessor } from "../inbound/processor.js";
import type { PartnerConfig } from "../inbound/verify/index.js";
import { createInboxProcessor } from "../inbound/worker.js";
import type { Logger } from "../telemetry/log.js";
import { bundledHandlers } from "./bundledHandlers.js";

/**
 * The inbox processor a cloud function uses: the handlers bundled with INBOUND_HANDLERS and the
 * same settings as the local platform. `partners` (when the function has them) decides which
 * partners' unhandled events are quarantined rather than ignored.
 */
export function inboxProcessorFor(db: Database, config: Config, logger: Logger, partners?: ReadonlyMap<string, PartnerConfig>): InboxProcessor {
  return createInboxProcessor({ db, config, logger }, bundledHandlers(), partners);
}
