import type { Config } from "../config.js";
import type { Database } from "../db/port.js";
import type { InboxProcessor } from "../inbound/processor.js";
import { createInboxProcessor } from "../inbound/worker.js";
import type { Logger } from "../telemetry/log.js";

/** The inbox processor a cloud function uses: the same order domain and settings as the local platform. */
export function inboxProcessorFor(db: Database, config: Config, logger: Logger): InboxProcessor {
  return createInboxProcessor({ db, config, logger });
}
