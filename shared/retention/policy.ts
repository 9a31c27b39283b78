/**
 * How long finished work is kept, from the configuration. Each retention is 0 (keep forever) or at
 * least MIN_RETENTION_DAYS.
 */
import type { Config } from "../config.js";

/**
 * The shortest retention allowed, in days. The alert scan (shared/alerts.ts) looks 7 days back for
 * dead letters it has not announced, and knows it announced one by the alert event it enqueued:
 * purging that event within the window would announce the same dead letter again.
 */
export const MIN_RETENTION_DAYS = 8;

export interface RetentionPolicy {
  /** Days a delivered outbound delivery is kept after its delivery; 0 keeps them forever. */
  deliveredDays: number;
  /** Days an outbound dead letter is kept after it died; 0 keeps them until replayed. */
  deadDays: number;
  /** Days a processed inbox entry is kept after it was processed; 0 keeps them forever. */
  inboxProcessedDays: number;
}

export const retentionPolicy = (config: Config): RetentionPolicy => ({
  deliveredDays: config.OUTBOUND_RETENTION_DAYS,
  deadDays: config.OUTBOUND_DEAD_LETTER_RETENTION_DAYS,
  inboxProcessedDays: config.INBOX_RETENTION_DAYS,
});

/** Nothing to delete, ever. */
export const keepsEverything = (p: RetentionPolicy) => p.deliveredDays === 0 && p.deadDays === 0 && p.inboxProcessedDays === 0;

/** Refuses retentions and batch sizes a purge cannot honour, saying what to use instead. */
export function checkRetention(days: Record<string, number>, batchSize: number): void {
  for (const [name, value] of Object.entries(days)) {
    if (!Number.isInteger(value) || value < 0 || (value > 0 && value < MIN_RETENTION_DAYS)) {
      throw new RangeError(`retention ${name} must be 0 (keep forever) or a whole number of days ≥ ${MIN_RETENTION_DAYS}, got ${value}`);
    }
  }
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError(`retention batchSize must be a whole number ≥ 1, got ${batchSize}`);
}

export interface PurgeOptions {
  /** Rows per statement. Default: 1000. */
  batchSize?: number;
  /** Checked before each batch: true stops the pass (what is deleted stays deleted). */
  shouldStop?: () => boolean;
  /** Pause between batches, so a first run over a big backlog does not monopolise the database. Default: 0. */
  pauseMs?: number;
}

/**
 * Runs `batch` (which deletes up to `limit` rows and says how many) again and again until one comes
 * back short or `shouldStop` says so, pausing `pauseMs` between batches.
 */
export async function inBatches(options: PurgeOptions, batch: (limit: number) => Promise<number>): Promise<void> {
  const limit = options.batchSize ?? 1000;
  while (!options.shouldStop?.()) {
    if ((await batch(limit)) < limit) return;
    if (options.pauseMs) await new Promise<void>((r) => setTimeout(r, options.pauseMs));
  }
}
