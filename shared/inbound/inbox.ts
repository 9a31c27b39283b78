/**
 * Inbox queries: storing an inbound event idempotently, reading entries for the admin surface,
 * and the in-process wake-up signal between ingest and the processor.
 *
 * Glossary: an *inbox entry* is one inbound webhook, unique by (partner, partner event id), its
 * raw bytes kept. Statuses: `pending` (new or replayed, due now), `deferred` (its prerequisite
 * has not arrived; retried until a deadline), `failed` (an error; retried on the schedule),
 * `processed` (done: applied, or a recorded no-op), `quarantined` (dead letter: not retried
 * automatically, listed with its reason, replayable), `ignored` (no handler takes it: settled,
 * listed, replayable).
 */
import { createHash } from "node:crypto";
import type { Queryable } from "../db/port.js";

export const INBOX_STATUSES = ["pending", "deferred", "failed", "processed", "quarantined", "ignored"] as const;
export type InboxStatus = (typeof INBOX_STATUSES)[number];

export function sha256Hex(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export interface NewInboxEntry {
  partnerName: string;
  partnerEventId: string;
  eventType: string | null;
  payload: Buffer;
  signatureVerified: boolean;
  receivedAt: Date;
  /** W3C trace context of the ingest span (an SDK installed), carried on to the processing span. */
  traceparent?: string | null;
}

export type StoreResult =
  | { kind: "stored"; id: string }
  | { kind: "duplicate"; id: string }
  | { kind: "mismatch"; id: string };

/**
 * Makes the event durable, at most once per (partner, event id). A second delivery changes
 * nothing; one with different bytes is recorded in `inbox_payload_conflicts` and counted on the
 * entry, never applied. Throws on a database error: the caller must then not acknowledge.
 */
export async function storeInboxEntry(db: Queryable, e: NewInboxEntry): Promise<StoreResult> {
  const hash = sha256Hex(e.payload);
  const at = e.receivedAt.toISOString();
  const inserted = await db.query<{ id: string }>(
    `INSERT INTO inbox_entries
       (partner_name, partner_event_id, event_type, payload, payload_sha256, signature_verified, received_at, next_attempt_at${e.traceparent ? ", traceparent" : ""})
     VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $7::timestamptz${e.traceparent ? ", $8" : ""})
     ON CONFLICT (partner_name, partner_event_id) DO NOTHING
     RETURNING id`,
    e.traceparent ? [e.partnerName, e.partnerEventId, e.eventType, e.payload, hash, e.signatureVerified, at, e.traceparent] : [e.partnerName, e.partnerEventId, e.eventType, e.payload, hash, e.signatureVerified, at],
  );
  const row = inserted.rows[0];
  if (row) return { kind: "stored", id: row.id };

  // A new statement, so a row committed by a concurrent delivery is visible now.
  const existing = await db.query<{ id: string; payload_sha256: string }>(
    "SELECT id, payload_sha256 FROM inbox_entries WHERE partner_name = $1 AND partner_event_id = $2",
    [e.partnerName, e.partnerEventId],
  );
  const found = existing.rows[0];
  if (!found) throw new Error(`inbox entry ${e.partnerName}/${e.partnerEventId} conflicted on insert but cannot be read back`);
  if (found.payload_sha256 === hash) return { kind: "duplicate", id: found.id };

  await db.query(
    `WITH conflict AS (
       INSERT INTO inbox_payload_conflicts (entry_id, payload_sha256, payload, first_seen_at, last_seen_at)
       VALUES ($1, $2, $3, $4::timestamptz, $4::timestamptz)
       ON CONFLICT (entry_id, payload_sha256)
       DO UPDATE SET deliveries = inbox_payload_conflicts.deliveries + 1, last_seen_at = EXCLUDED.last_seen_at
       RETURNING entry_id
     )
     UPDATE inbox_entries SET payload_mismatches = payload_mismatches + 1
     WHERE id = (SELECT entry_id FROM conflict)`,
    [found.id, hash, e.payload, at],
  );
  return { kind: "mismatch", id: found.id };
}

/** An entry as the admin surface shows it (without the raw bytes). */
export interface InboxEntrySummary {
  id: string;
  partnerName: string;
  partnerEventId: string;
  eventType: string | null;
  status: InboxStatus;
  outcome: string | null;
  receivedAt: string;
  nextAttemptAt: string | null;
  processedAt: string | null;
  attempts: number;
  failures: number;
  deferrals: number;
  deferDeadlineAt: string | null;
  entityKey: string | null;
  lastError: string | null;
  quarantineReason: string | null;
  payloadMismatches: number;
  replays: number;
  signatureVerified: boolean;
  payloadSha256: string;
}

/** What forwarding did with an entry for one destination (shared/inbound/forward.ts, `inbox_entries.forwarding`). */
export type ForwardOutcome =
  | { destination: string; subscriptionId: string; outcome: "enqueued"; deliveryId: string }
  | { destination: string; subscriptionId: string; outcome: "skipped"; reason: string };

export interface InboxEntryDetail extends InboxEntrySummary {
  /** Per destination of a forwarding partner, when the entry was stored; null: its partner did not forward. */
  forwarding: ForwardOutcome[] | null;
  /** The raw bytes as UTF-8 text (what the partner signed), and as base64 for exactness. */
  payloadText: string;
  payloadBase64: string;
  conflicts: { payloadSha256: string; payloadText: string; deliveries: number; firstSeenAt: string; lastSeenAt: string }[];
  replayLog: { requestedAt: string; requestedBy: string; previousStatus: string; previousReason: string | null }[];
}

const SUMMARY_COLUMNS = `id, partner_name, partner_event_id, event_type, status, outcome, received_at, next_attempt_at,
  processed_at, attempts, failures, deferrals, defer_deadline_at, entity_key, last_error, quarantine_reason,
  payload_mismatches, replays, signature_verified, payload_sha256`;

type Row = Record<string, unknown>;
const iso = (v: unknown): string | null => (v == null ? null : new Date(v as string | Date).toISOString());

function toSummary(r: Row): InboxEntrySummary {
  const settled = r.status === "processed" || r.status === "quarantined" || r.status === "ignored";
  return {
    id: String(r.id),
    partnerName: String(r.partner_name),
    partnerEventId: String(r.partner_event_id),
    eventType: (r.event_type as string | null) ?? null,
    status: r.status as InboxStatus,
    outcome: (r.outcome as string | null) ?? null,
    receivedAt: iso(r.received_at)!,
    nextAttemptAt: settled ? null : iso(r.next_attempt_at),
    processedAt: iso(r.processed_at),
    attempts: Number(r.attempts),
    failures: Number(r.failures),
    deferrals: Number(r.deferrals),
    deferDeadlineAt: iso(r.defer_deadline_at),
    entityKey: (r.entity_key as string | null) ?? null,
    lastError: (r.last_error as string | null) ?? null,
    quarantineReason: (r.quarantine_reason as string | null) ?? null,
    payloadMismatches: Number(r.payload_mismatches),
    replays: Number(r.replays),
    signatureVerified: Boolean(r.signature_verified),
    payloadSha256: String(r.payload_sha256),
  };
}

export interface ListOptions {
  status?: InboxStatus;
  partner?: string;
  /** Default 100, at most 1000. */
  limit?: number;
  /** Entries received before this time. */
  before?: Date;
  /** The `key` of the last entry of the previous page. */
  after?: [string, string];
}

/** Newest first; each carries `key`, its page key (received_at exact to the microsecond, id) to pass as `after`. */
export async function listInboxEntries(db: Queryable, options: ListOptions = {}): Promise<(InboxEntrySummary & { key: [string, string] })[]> {
  const limit = Math.min(Math.max(options.limit ?? 100, 1), 1001);
  const r = await db.query<Row>(
    `SELECT ${SUMMARY_COLUMNS}, received_at::text AS received_key FROM inbox_entries
     WHERE ($1::text IS NULL OR status = $1)
       AND ($2::text IS NULL OR partner_name = $2)
       AND ($3::timestamptz IS NULL OR received_at < $3::timestamptz)
       AND ($5::timestamptz IS NULL OR (received_at, id) < ($5::timestamptz, $6::uuid))
     ORDER BY received_at DESC, id DESC
     LIMIT $4`,
    [options.status ?? null, options.partner ?? null, options.before?.toISOString() ?? null, limit, options.after?.[0] ?? null, options.after?.[1] ?? null],
  );
  return r.rows.map((row) => ({ ...toSummary(row), key: [String(row.received_key), String(row.id)] as [string, string] }));
}

/** How many entries have `status` (and come from `partner`): the admin page's count beyond its page. */
export async function countInboxEntries(db: Queryable, options: Pick<ListOptions, "status" | "partner"> = {}): Promise<number> {
  const r = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM inbox_entries
     WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR partner_name = $2)`,
    [options.status ?? null, options.partner ?? null],
  );
  return r.rows[0]?.n ?? 0;
}

export async function getInboxEntry(db: Queryable, id: string): Promise<InboxEntryDetail | undefined> {
  const r = await db.query<Row>(`SELECT ${SUMMARY_COLUMNS}, payload, forwarding FROM inbox_entries WHERE id = $1`, [id]);
  const row = r.rows[0];
  if (!row) return undefined;
  const payload = Buffer.from(row.payload as Uint8Array);
  const conflicts = await db.query<Row>(
    `SELECT payload_sha256, payload, deliveries, first_seen_at, last_seen_at
     FROM inbox_payload_conflicts WHERE entry_id = $1 ORDER BY first_seen_at`,
    [id],
  );
  const replays = await db.query<Row>(
    "SELECT requested_at, requested_by, previous_status, previous_reason FROM inbox_replays WHERE entry_id = $1 ORDER BY id",
    [id],
  );
  return {
    ...toSummary(row),
    payloadText: payload.toString("utf8"),
    payloadBase64: payload.toString("base64"),
    forwarding: (row.forwarding as ForwardOutcome[] | null) ?? null,
    conflicts: conflicts.rows.map((c) => ({
      payloadSha256: String(c.payload_sha256),
      payloadText: Buffer.from(c.payload as Uint8Array).toString("utf8"),
      deliveries: Number(c.deliveries),
      firstSeenAt: iso(c.first_seen_at)!,
      lastSeenAt: iso(c.last_seen_at)!,
    })),
    replayLog: replays.rows.map((x) => ({
      requestedAt: iso(x.requested_at)!,
      requestedBy: String(x.requested_by),
      previousStatus: String(x.previous_status),
      previousReason: (x.previous_reason as string | null) ?? null,
    })),
  };
}

/** Counts by status: the admin overview and tests. */
export async function countInboxByStatus(db: Queryable): Promise<Record<InboxStatus, number>> {
  const r = await db.query<{ status: InboxStatus; n: number }>("SELECT status, count(*)::int AS n FROM inbox_entries GROUP BY status");
  const counts = Object.fromEntries(INBOX_STATUSES.map((s) => [s, 0])) as Record<InboxStatus, number>;
  for (const row of r.rows) counts[row.status] = Number(row.n);
  return counts;
}

// In-process wake-up: ingest signals "something new is stored in this database", the processor
// of the same database claims at once instead of waiting for its next poll. Keyed by the database
// object, so two platforms in one process (tests) do not wake each other.
const wakers = new WeakMap<object, Set<() => void>>();

export function signalInboxStored(db: object): void {
  for (const wake of wakers.get(db) ?? []) wake();
}

export function onInboxStored(db: object, wake: () => void): () => void {
  let set = wakers.get(db);
  if (!set) wakers.set(db, (set = new Set()));
  set.add(wake);
  return () => set.delete(wake);
}
