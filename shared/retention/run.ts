/**
 * A retention run: outbox, then inbox, at most once per period per database, whoever asks (the
 * local platform's job, each cloud relay run). The turn is taken in `retention_runs` (migration
 * 009), so any number of instances waking as often as they like run it about once an hour.
 */
import type { Config } from "../config.js";
import type { Database, Queryable } from "../db/port.js";
import { runPeriodically, type PeriodicJob } from "../periodic.js";
import type { Logger } from "../telemetry/log.js";
import { purgeInbox } from "./inbox.js";
import { purgeOutbox, type PurgeResult } from "./outbox.js";
import { checkRetention, keepsEverything, retentionPolicy, type PurgeOptions, type RetentionPolicy } from "./policy.js";

export interface RetentionResult {
  outbound: PurgeResult;
  inbox: { entries: number };
}

/** Takes the turn if the last run started at least $1 seconds ago; a row comes back if it did. */
const TAKE_TURN = `INSERT INTO retention_runs AS r (singleton, started_at) VALUES (true, now())
   ON CONFLICT (singleton) DO UPDATE SET started_at = now()
   WHERE r.started_at <= now() - make_interval(secs => $1::int)
   RETURNING r.started_at`;

/** One retention run now, whatever the turn: outbox first, then inbox (each stops when told to). */
export async function purgeAll(db: Queryable, policy: RetentionPolicy, options: PurgeOptions = {}): Promise<RetentionResult> {
  const outbound = await purgeOutbox(db, policy, options);
  return { outbound, inbox: { entries: await purgeInbox(db, policy.inboxProcessedDays, options) } };
}

/**
 * `purgeAll`, if this database's last retention run started at least `everySeconds` ago (default:
 * an hour); otherwise nothing, and null.
 */
export async function purgeIfDue(
  db: Queryable,
  policy: RetentionPolicy,
  options: PurgeOptions & { everySeconds?: number } = {},
): Promise<RetentionResult | null> {
  checkRetention({ ...policy }, options.batchSize ?? 1000);
  if (keepsEverything(policy)) return null;
  const turn = await db.query(TAKE_TURN, [options.everySeconds ?? 3600]);
  if (turn.rows.length === 0) return null;
  return purgeAll(db, policy, options);
}

/**
 * The local platform's retention job: it wakes a minute after start (a start is never slowed),
 * then every five minutes, and runs when the database's turn says so (about hourly). With every
 * retention at 0 it does nothing.
 */
export function startRetention(
  ctx: { config: Config; db: Database; logger: Logger },
  options: { intervalMs?: number; firstDelayMs?: number; everySeconds?: number; batchSize?: number } = {},
): PeriodicJob {
  const logger = ctx.logger.child({ worker: "retention" });
  const policy = retentionPolicy(ctx.config);
  return runPeriodically("retention", async (shouldStop) => {
    const purged = await purgeIfDue(ctx.db, policy, { batchSize: options.batchSize, everySeconds: options.everySeconds, shouldStop, pauseMs: 10 });
    if (purged && purged.outbound.deliveries + purged.outbound.events + purged.inbox.entries > 0) {
      logger.info({ ...purged, policy }, "purged finished work past its retention");
    }
  }, {
    intervalMs: options.intervalMs ?? 300_000,
    firstDelayMs: options.firstDelayMs ?? 60_000,
    onError: (error) => logger.warn({ err: { type: (error as Error)?.name, message: (error as Error)?.message } }, "retention run failed; retrying at the next interval"),
  });
}
