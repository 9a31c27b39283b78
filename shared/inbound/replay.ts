/**
 * Replay: put inbox entries back on the normal path. A replayed entry becomes `pending`, due now,
 * with a fresh retry budget and deferral deadline; the processor then treats it like a new arrival
 * (the reconciler makes a replay of something already applied a recorded no-op). Every replay is
 * logged in `inbox_replays` with who asked and what the entry looked like before.
 *
 * Any entry that is not already `pending` may be replayed. Clearing the lease means a processor
 * still working on the entry loses it: its transaction is discarded, never half-applied.
 */
import type { Database } from "../db/port.js";
import { signalInboxStored, type InboxStatus } from "./inbox.js";

export const REPLAYABLE_STATUSES = ["quarantined", "failed", "deferred", "processed", "ignored"] as const;
export type ReplayableStatus = (typeof REPLAYABLE_STATUSES)[number];

export interface ReplayBy {
  /** Who asked, for the log (the API: a key id, or `bootstrap` for ADMIN_TOKEN). */
  by: string;
  now?: Date;
}

export type ReplayOneResult =
  | { kind: "replayed"; id: string; previousStatus: InboxStatus }
  | { kind: "not_found" }
  | { kind: "already_pending" };

// One statement: pick the targets (row-locked), log them, reset them.
const REPLAY_SQL = (targetWhere: string) => `
  WITH target AS (
    SELECT id, status, COALESCE(quarantine_reason, last_error) AS reason FROM inbox_entries
    WHERE ${targetWhere}
    ORDER BY received_at, id
    LIMIT $3
    FOR UPDATE
  ),
  logged AS (
    INSERT INTO inbox_replays (entry_id, requested_at, requested_by, previous_status, previous_reason)
    SELECT id, $1::timestamptz, $2, status, reason FROM target
  )
  UPDATE inbox_entries e
  SET status = 'pending', next_attempt_at = $1::timestamptz, lease_token = NULL, failures = 0, deferrals = 0,
      defer_deadline_at = NULL, quarantine_reason = NULL, last_error = NULL, outcome = NULL, processed_at = NULL,
      replays = e.replays + 1
  FROM target WHERE e.id = target.id
  RETURNING e.id, target.status AS previous_status`;

/** Replays one entry. */
export async function replayEntry(db: Database, id: string, who: ReplayBy): Promise<ReplayOneResult> {
  const at = (who.now ?? new Date()).toISOString();
  const r = await db.query<{ id: string; previous_status: InboxStatus }>(
    REPLAY_SQL("id = $4 AND status <> 'pending'"),
    [at, who.by, 1, id],
  );
  const row = r.rows[0];
  if (row) {
    signalInboxStored(db);
    return { kind: "replayed", id: row.id, previousStatus: row.previous_status };
  }
  const exists = await db.query("SELECT 1 FROM inbox_entries WHERE id = $1", [id]);
  return exists.rows.length === 0 ? { kind: "not_found" } : { kind: "already_pending" };
}

export interface BulkReplayFilter {
  /** Default: `quarantined`. */
  status?: ReplayableStatus;
  partner?: string;
  /** Only these entries (still filtered by status). */
  ids?: string[];
  /** At most this many, oldest first. Default 100, at most 1000. */
  limit?: number;
}

/** Replays every entry matching the filter (up to the limit); returns their ids. */
export async function replayEntries(db: Database, filter: BulkReplayFilter, who: ReplayBy): Promise<{ ids: string[] }> {
  const at = (who.now ?? new Date()).toISOString();
  const limit = Math.min(Math.max(filter.limit ?? 100, 1), 1000);
  const r = await db.query<{ id: string }>(
    REPLAY_SQL("status = $4 AND ($5::text IS NULL OR partner_name = $5) AND ($6::uuid[] IS NULL OR id = ANY($6::uuid[]))"),
    [at, who.by, limit, filter.status ?? "quarantined", filter.partner ?? null, filter.ids ?? null],
  );
  if (r.rows.length > 0) signalInboxStored(db);
  return { ids: r.rows.map((x) => String(x.id)) };
}
