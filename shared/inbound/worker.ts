/**
 * The inbox processor as the local platform runs it: the order domain as handler, applied
 * transitions published through the outbox, settings from the configuration.
 */
import type { PlatformContext } from "../platform.js";
import { enqueueOrderEvents } from "./orderEvents.js";
import { createOrderHandler } from "./orders.js";
import { InboxProcessor } from "./processor.js";

export function createInboxProcessor(ctx: PlatformContext): InboxProcessor {
  const { config } = ctx;
  return new InboxProcessor({
    db: ctx.db,
    handler: createOrderHandler({ onApplied: enqueueOrderEvents({ maxPayloadBytes: config.MAX_PAYLOAD_BYTES }) }),
    batchSize: config.INBOX_BATCH_SIZE,
    leaseSeconds: config.INBOX_LEASE_SECONDS,
    pollIntervalMs: config.INBOX_POLL_MS,
    retrySchedule: config.INBOX_RETRY_SCHEDULE,
    deferDelaySeconds: config.INBOX_DEFER_DELAY_SECONDS,
    deferDeadlineSeconds: config.INBOX_DEFER_DEADLINE_SECONDS,
    logger: ctx.logger.child({ worker: "inbox-processor" }),
  });
}

/** Starts the processor; `stop()` finishes the round in flight. */
export function startInboxWorker(ctx: PlatformContext): InboxProcessor {
  return createInboxProcessor(ctx).start();
}
