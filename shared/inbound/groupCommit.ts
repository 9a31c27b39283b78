/**
 * Group commit for the inbox: concurrent ingests share one multi-row INSERT, so one round trip,
 * one commit and one WAL flush serve many events, instead of one each.
 *
 * When nothing is in flight, an entry goes out at the next turn of the event loop (setImmediate,
 * so entries that arrived together leave together): at low load the latency is that of a
 * single-row INSERT. While an INSERT is in flight, arrivals wait for it and leave together in the
 * next batch; a further INSERT starts beside it only once `busyBatch` entries wait, and at most
 * `maxInFlight` run at once. Small concurrent INSERTs would each pay a commit and a statement's
 * fixed cost in PostgreSQL: starting one for any arrival while a slot was free made batches of 8
 * on average and cost 150–185 µs of PostgreSQL CPU per event on the ingest bench; waiting for 16
 * made them ~16 and the cost 90–120 µs (docs/inbound.md, "Group commit").
 *
 * The guarantees are those of `storeInboxEntry`: each caller's promise resolves only after its
 * entry is committed (or was already there), and rejects when it may not be, so a caller never
 * acknowledges an event that is not stored.
 *
 * @example
 * const inbox = createGroupCommit(db, { maxInFlight: 4, busyBatch: 16 });
 * const stored = await inbox.store(entry); // instead of storeInboxEntry(db, entry)
 */
import type { Queryable } from "../db/port.js";
import { isUnavailable } from "../db/port.js";
import { sha256Hex, storeInboxEntry, type NewInboxEntry, type StoreResult } from "./inbox.js";

export interface GroupCommitOptions {
  /** Most entries in one INSERT. Default: 256. */
  maxBatch?: number;
  /** Most INSERTs in flight at once; keep it below the pool size. Default: 4. */
  maxInFlight?: number;
  /**
   * While an INSERT is in flight, a further one starts only once this many entries wait; fewer
   * wait for the running one to finish. 1 starts one for any arrival while a slot is free. Default: 16.
   */
  busyBatch?: number;
}

export interface GroupCommit {
  /** Like `storeInboxEntry(db, entry)`, shared with whoever stores at the same moment. */
  store(entry: NewInboxEntry): Promise<StoreResult>;
  /** Resolves once every entry handed over so far is settled. */
  drain(): Promise<void>;
}

interface Waiting {
  entry: NewInboxEntry;
  resolve: (result: StoreResult) => void;
  reject: (error: unknown) => void;
}

// One statement for the whole batch. Everything travels as text[] (payloads as hex) because
// that is the array type both pg and PGlite serialise the same way.
// `traced`: some entry carries its ingest's trace context (an SDK is installed); without one the
// statement is the one it always was.
const insertBatch = (traced: boolean) => `
  INSERT INTO inbox_entries
    (partner_name, partner_event_id, event_type, payload, payload_sha256, signature_verified, received_at, next_attempt_at${traced ? ", traceparent" : ""})
  SELECT partner_name, partner_event_id, event_type, decode(payload_hex, 'hex'), payload_sha256,
         signature_verified::boolean, received_at::timestamptz, received_at::timestamptz${traced ? ", traceparent" : ""}
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]${traced ? ", $8::text[]" : ""})
    AS input(partner_name, partner_event_id, event_type, payload_hex, payload_sha256, signature_verified, received_at${traced ? ", traceparent" : ""})
  ON CONFLICT (partner_name, partner_event_id) DO NOTHING
  RETURNING id, partner_name, partner_event_id`;
const INSERT_BATCH = insertBatch(false);
const INSERT_BATCH_TRACED = insertBatch(true);

const keyOf = (partner: string, eventId: string) => `${partner}\u0000${eventId}`;

export function createGroupCommit(db: Queryable, options: GroupCommitOptions = {}): GroupCommit {
  const maxBatch = options.maxBatch ?? 256;
  const maxInFlight = options.maxInFlight ?? 4;
  const busyBatch = Math.max(1, options.busyBatch ?? 16);
  const queue: Waiting[] = [];
  let inFlight = 0;
  let scheduled = false;
  const settledWaiters: Array<() => void> = [];

  const settleIfIdle = () => {
    if (inFlight === 0 && queue.length === 0) for (const done of settledWaiters.splice(0)) done();
  };

  /** Whether the waiting entries should leave now rather than wait for an INSERT in flight. */
  const due = () => queue.length > 0 && inFlight < maxInFlight && (inFlight === 0 || queue.length >= busyBatch);

  const pump = () => {
    scheduled = false;
    while (due()) {
      const batch = queue.splice(0, maxBatch);
      inFlight++;
      void flush(batch).finally(() => {
        inFlight--;
        pump();
        settleIfIdle();
      });
    }
  };

  const schedule = () => {
    // Otherwise the flush in flight pumps when it finishes. When due, gather this turn's arrivals.
    if (scheduled || !due()) return;
    scheduled = true;
    setImmediate(pump);
  };

  /** Entries the batch did not insert: duplicates (also within the batch) and payload mismatches. */
  const one = async (w: Waiting) => {
    try {
      w.resolve(await storeInboxEntry(db, w.entry));
    } catch (error) {
      w.reject(error);
    }
  };

  const flush = async (batch: Waiting[]) => {
    let inserted: Map<string, string>;
    try {
      const columns = [
        batch.map((w) => w.entry.partnerName),
        batch.map((w) => w.entry.partnerEventId),
        batch.map((w) => w.entry.eventType),
        batch.map((w) => w.entry.payload.toString("hex")),
        batch.map((w) => sha256Hex(w.entry.payload)),
        batch.map((w) => String(w.entry.signatureVerified)),
        batch.map((w) => w.entry.receivedAt.toISOString()),
      ];
      const traced = batch.some((w) => w.entry.traceparent);
      const r = await db.query<{ id: string; partner_name: string; partner_event_id: string }>(
        traced ? INSERT_BATCH_TRACED : INSERT_BATCH,
        traced ? [...columns, batch.map((w) => w.entry.traceparent ?? null)] : columns,
      );
      inserted = new Map(r.rows.map((row) => [keyOf(row.partner_name, row.partner_event_id), String(row.id)]));
    } catch (error) {
      // Database away: nobody is stored, everybody hears it (and answers 503).
      if (isUnavailable(error) || batch.length === 1) {
        for (const w of batch) w.reject(error);
        return;
      }
      // Anything else may be one bad entry: store each alone so only that one fails.
      await Promise.all(batch.map(one));
      return;
    }
    const rest: Waiting[] = [];
    for (const w of batch) {
      const key = keyOf(w.entry.partnerName, w.entry.partnerEventId);
      const id = inserted.get(key);
      if (id !== undefined) {
        inserted.delete(key); // a second copy in the same batch is a duplicate, not a second insert
        w.resolve({ kind: "stored", id });
      } else rest.push(w);
    }
    // Sequentially: a duplicate must see the row its twin just committed.
    for (const w of rest) await one(w);
  };

  return {
    store(entry) {
      return new Promise<StoreResult>((resolve, reject) => {
        queue.push({ entry, resolve, reject });
        schedule();
      });
    },
    drain() {
      if (inFlight === 0 && queue.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => settledWaiters.push(resolve));
    },
  };
}
