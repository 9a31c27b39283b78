import { ensureAlertSubscription, scanForAlerts } from "../alerts.js";
import type { Config } from "../config.js";
import type { Database } from "../db/port.js";
import { createOutboundRelay } from "../outbound/worker.js";
import { purgeIfDue, type RetentionResult } from "../retention/run.js";
import { retentionPolicy } from "../retention/policy.js";
import { DEFAULT_HTTP_CONCURRENCY, type Relay } from "../outbound/relay.js";
import type { Logger } from "../telemetry/log.js";
import { drainOutbox, purgeWithTimeLeft, type DrainSummary } from "./drainOutbox.js";
import { listenUntilBudget } from "./listenRelay.js";
import type { RelayMode } from "./settings.js";
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
export function relayFor(db: Database, config: Config, logger: Logger, options: { listening?: boolean } = {}): {
  relay: Relay;
  /** Deliveries completed so far, and when the last were (ms since the epoch): a listening run's summary and idle stop. */
  completed(): { count: number; lastAt: number };
  purge(shouldStop: () => boolean): Promise<RetentionResult | null>;
  alerts(): Promise<number>;
  passReserveMs: number;
  close(): Promise<void>;
} {
  const passReserveMs = config.OUTBOUND_TIMEOUT_MS + 5_000;
  let count = 0;
  let lastAt = 0;
  const { relay, transport } = createOutboundRelay({ db, config, logger }, {
    batchSize: Math.min(config.OUTBOUND_BATCH_SIZE, DEFAULT_HTTP_CONCURRENCY),
    // A listening run stops with `passReserveMs` left: what it holds must be written within it.
    ...(options.listening ? { shutdownTimeoutMs: passReserveMs - 1_000 } : {}),
    onCompleted: (completions) => { count += completions.length; lastAt = Date.now(); },
  });
  const policy = retentionPolicy(config);
  let subscribed = false;
  return {
    relay,
    completed: () => ({ count, lastAt }),
    purge: (shouldStop) => purgeIfDue(db, policy, { shouldStop }),
    async alerts() {
      if (config.ALERT_WEBHOOK_URL && !subscribed) {
        if (!config.ALERT_WEBHOOK_SECRET) logger.warn("ALERT_WEBHOOK_URL is set without ALERT_WEBHOOK_SECRET: alerts are signed with a generated secret the receiver cannot know; put one in the stack's alert secret");
        await ensureAlertSubscription(db, config.ALERT_WEBHOOK_URL, config.ALERT_WEBHOOK_SECRET);
        subscribed = true;
      }
      return (await scanForAlerts(db, { logger, maxPayloadBytes: config.MAX_PAYLOAD_BYTES })).length;
    },
    passReserveMs,
    close: () => transport.close(),
  };
}

/** How a run was started: the relay mode its stack set, and whether the management function woke it. */
export interface RelayRun {
  mode: RelayMode;
  /** Started by the management function's wake-up (scheduled mode), not by the schedule. */
  woken?: boolean;
}

/** How long a woken run keeps listening after its last delivery: sends that follow closely go in the same run. */
export const WOKEN_LINGER_MS = 10_000;

/**
 * One relay run of a cloud function, whatever triggered it: alerts, deliveries, inbox entries the
 * queue does not hold, and retention when due, until `remainingMs()` is nearly spent.
 * - `listening` mode: listens (LISTEN/NOTIFY, poll backstop) until close to the budget
 *   (shared/cloud/listenRelay.ts); the schedule overlaps runs, so one always listens.
 * - `scheduled` mode: drains what is due and stops when idle (drainOutbox.ts); a run the management
 *   function woke listens too, until WOKEN_LINGER_MS pass with nothing to send.
 * Then retention with the time left, when due. Logs and returns the summary.
 */
export async function runScheduledRelay(db: Database, config: Config, logger: Logger, remainingMs: () => number, run: RelayRun = { mode: "scheduled" }): Promise<DrainSummary> {
  const listening = run.mode === "listening" || run.woken === true;
  const { relay, completed, purge, alerts, passReserveMs, close } = relayFor(db, config, logger, { listening });
  try {
    // Secrets not under the first key of ENCRYPTION_KEYS (plaintext rows, a rotation) are rewritten first (docs/secrets.md).
    await reencryptPass(db, logger, () => remainingMs() < passReserveMs);
    const inbox = inboxProcessorFor(db, config, logger);
    let summary: DrainSummary;
    if (listening) {
      summary = await listenUntilBudget({
        relay, inbox, inboxPollMs: config.INBOX_POLL_MS, inboxBatchSize: config.INBOX_BATCH_SIZE, alerts, remainingMs, reserveMs: passReserveMs,
        attempted: () => completed().count, lastActivity: () => completed().lastAt,
        ...(run.mode === "scheduled" ? { idleStopMs: WOKEN_LINGER_MS } : {}),
      });
      summary.mode = "listen";
      await purgeWithTimeLeft(summary, purge, remainingMs);
    } else {
      summary = await drainOutbox({ relay, purge, alerts, reserveMs: passReserveMs, inbox, remainingMs });
      summary.mode = "drain";
    }
    logger.info({ ...summary, relayMode: run.mode, woken: run.woken === true }, "relay run finished");
    return summary;
  } finally {
    await close();
  }
}
