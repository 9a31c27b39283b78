import { ensureAlertSubscription, scanForAlerts } from "../alerts.js";
import type { Config } from "../config.js";
import type { Database } from "../db/port.js";
import { createOutboundRelay } from "../outbound/worker.js";
import { purgeIfDue, type RetentionResult } from "../retention/run.js";
import { retentionPolicy } from "../retention/policy.js";
import { DEFAULT_HTTP_CONCURRENCY, type Relay } from "../outbound/relay.js";
import type { Logger } from "../telemetry/log.js";
import { drainOutbox, type DrainSummary } from "./drainOutbox.js";
import { inboxProcessorFor } from "./inboxProcessor.js";
import { reencryptPass } from "../crypto/reencryptWorker.js";

/**
 * A relay for one scheduled run (not started: the caller drives `runOnce`), the retention pass
 * the same run makes when one is due (about hourly, shared by all runs through the database), and
 * the alert scan (new dead letters and quarantined entries become signed `alert.*` events, sent to
 * ALERT_WEBHOOK_URL's system subscription when one is configured, and logged at error level in
 * any case); `close` frees the relay's connection pool.
 *
 * A scheduled pass claims at most one HTTP turn's worth (64), and of each subscription one round
 * of its adaptive limit (8 at first, doubling per pass while it answers: a hanging endpoint never
 * fills a pass), so it lasts at most one attempt timeout plus a claim and a write:
 * `passReserveMs`, the time the drain keeps for a pass, then holds, and the platform never cuts a
 * pass short (its leases would hold the deliveries up until they run out).
 */
export function relayFor(db: Database, config: Config, logger: Logger): {
  relay: Relay;
  purge(shouldStop: () => boolean): Promise<RetentionResult | null>;
  alerts(): Promise<number>;
  passReserveMs: number;
  close(): Promise<void>;
} {
  const { relay, transport } = createOutboundRelay({ db, config, logger }, { batchSize: Math.min(config.OUTBOUND_BATCH_SIZE, DEFAULT_HTTP_CONCURRENCY) });
  const policy = retentionPolicy(config);
  let subscribed = false;
  return {
    relay,
    purge: (shouldStop) => purgeIfDue(db, policy, { shouldStop }),
    async alerts() {
      if (config.ALERT_WEBHOOK_URL && !subscribed) {
        if (!config.ALERT_WEBHOOK_SECRET) logger.warn("ALERT_WEBHOOK_URL is set without ALERT_WEBHOOK_SECRET: alerts are signed with a generated secret the receiver cannot know; put one in the stack's alert secret");
        await ensureAlertSubscription(db, config.ALERT_WEBHOOK_URL, config.ALERT_WEBHOOK_SECRET);
        subscribed = true;
      }
      return (await scanForAlerts(db, { logger, maxPayloadBytes: config.MAX_PAYLOAD_BYTES })).length;
    },
    passReserveMs: config.OUTBOUND_TIMEOUT_MS + 5_000,
    close: () => transport.close(),
  };
}

/**
 * One scheduled relay run of a cloud function, whatever triggered it: alerts, deliveries, inbox
 * entries the queue could not hold, and retention when due, until `remainingMs()` is nearly spent.
 * Logs and returns the summary.
 */
export async function runScheduledRelay(db: Database, config: Config, logger: Logger, remainingMs: () => number): Promise<DrainSummary> {
  const { relay, purge, alerts, passReserveMs, close } = relayFor(db, config, logger);
  try {
    // Secrets not under the first key of ENCRYPTION_KEYS (plaintext rows, a rotation) are rewritten first (docs/secrets.md).
    await reencryptPass(db, logger, () => remainingMs() < passReserveMs);
    const summary = await drainOutbox({ relay, purge, alerts, reserveMs: passReserveMs, inbox: inboxProcessorFor(db, config, logger), remainingMs });
    logger.info(summary, "relay run finished");
    return summary;
  } finally {
    await close();
  }
}
