/**
 * The inbox processor as the platform runs it: the user's handlers (INBOUND_HANDLERS) dispatched
 * by partner and event type, settings from the configuration.
 */
import type { PlatformContext } from "../context.js";
import { createDispatchHandler } from "./dispatch.js";
import type { InboundHandler } from "./handlers.js";
import { InboxProcessor } from "./processor.js";
import { loadPartners, type PartnerConfig } from "./verify/index.js";

/**
 * @param partners whose `unhandled` setting applies. Default: PARTNERS / PARTNERS_FILE of the
 * configuration (the cloud functions pass the partners they loaded from their secret store).
 */
export function createInboxProcessor(
  ctx: PlatformContext,
  handlers: readonly InboundHandler[] = [],
  partners: ReadonlyMap<string, PartnerConfig> = loadPartners({ PARTNERS: ctx.config.PARTNERS, PARTNERS_FILE: ctx.config.PARTNERS_FILE }),
): InboxProcessor {
  const { config } = ctx;
  const quarantineUnhandled = new Set([...partners.values()].filter((p) => p.unhandled === "quarantine").map((p) => p.name));
  return new InboxProcessor({
    db: ctx.db,
    handler: createDispatchHandler(handlers, { quarantineUnhandled, enqueue: { maxPayloadBytes: config.MAX_PAYLOAD_BYTES } }),
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
export function startInboxWorker(ctx: PlatformContext, handlers: readonly InboundHandler[] = []): InboxProcessor {
  return createInboxProcessor(ctx, handlers).start();
}
