/**
 * Inbox retention: processed inbound entries (their raw payloads, payload conflicts and replay
 * history) are deleted once processed longer ago than the retention. Entries still owed work
 * (pending, deferred, failed) and quarantined ones (an operator must act) are never touched.
 *
 * Consequence to know: deduplication by (partner, partner event id) holds as long as the entry is
 * kept. A partner re-sending an event after that is stored and processed again; the reconciler
 * then records it as a duplicate or stale transition, so an order does not move twice. Keep the
 * retention longer than your partners' retry windows (days, for most).
 */
import type { Queryable } from "../db/port.js";
import { checkRetention, inBatches, type PurgeOptions } from "./policy.js";

/**
 * One batch of up to $2 entries processed more than $1 days ago. `received_at` narrows the search
 * through the (status, received_at) index: an entry processed before the cutoff arrived before it.
 * Payload conflicts and replays go with their entry (ON DELETE CASCADE).
 */
const PURGE_PROCESSED = `DELETE FROM inbox_entries
   WHERE id IN (
     SELECT id FROM inbox_entries
     WHERE status IN ('processed', 'ignored')
       AND received_at < now() - make_interval(days => $1::int)
       AND processed_at < now() - make_interval(days => $1::int)
     LIMIT $2
     FOR UPDATE SKIP LOCKED
   )`;

/** Deletes processed entries past `processedDays` (0: none), batch after batch; returns how many. */
export async function purgeInbox(db: Queryable, processedDays: number, options: PurgeOptions = {}): Promise<number> {
  checkRetention({ inboxProcessedDays: processedDays }, options.batchSize ?? 1000);
  let entries = 0;
  if (processedDays > 0) {
    await inBatches(options, async (limit) => {
      const { rowCount } = await db.query(PURGE_PROCESSED, [processedDays, limit]);
      entries += rowCount ?? 0;
      return rowCount ?? 0;
    });
  }
  return entries;
}
