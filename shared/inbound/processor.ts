/**
 * The inbox processor: claims due entries under a lease (`FOR UPDATE SKIP LOCKED`, so any number
 * of processors may run), and for each, in ONE transaction, runs the handler (reconciler +
 * business change) and records the outcome. Errors roll the change back and are retried on a
 * bounded schedule, then quarantined; a deferred entry is retried until its deadline, then
 * quarantined. A failing entry only moves its own `next_attempt_at`, so it never blocks others.
 */
import type { Logger } from "pino";
import { isUnavailable, type Database, type Transaction } from "../db/port.js";
import { recordInboxProcessed, SPANS, withSpan } from "../telemetry/telemetry.js";
import { onInboxStored, type InboxStatus } from "./inbox.js";
import { startPollLoop, type PollLoop } from "./pollLoop.js";
import { failuresOf } from "../telemetry/repeatedFailures.js";

/** An entry as a handler sees it, under a lease. */
export interface ClaimedEntry {
  id: string;
  partnerName: string;
  partnerEventId: string;
  eventType: string | null;
  payload: Buffer;
  receivedAt: Date;
  attempts: number;
  failures: number;
  deferrals: number;
  deferDeadlineAt: Date | null;
  leaseToken: string;
  /** The ingest's W3C trace context, when an SDK traced it: processing continues that trace. */
  traceparent?: string | null;
}

/** What a handler decided; a thrown error means "failed, retry on the schedule". */
export type HandlerOutcome =
  | { kind: "applied"; entityKey: string; detail?: string }
  | { kind: "duplicate" | "stale"; entityKey: string; detail: string }
  | { kind: "deferred"; entityKey: string; reason: string }
  /** Can never succeed as it is (malformed, impossible transition): quarantined at once. */
  | { kind: "rejected"; entityKey?: string; reason: string }
  /** No handler takes it: settled as `ignored` (visible, replayable once a handler takes it). */
  | { kind: "ignored"; reason: string };

/** Runs inside the processor's transaction: reads and writes through `tx` only. */
export type InboxHandler = (tx: Transaction, entry: ClaimedEntry, context: { now: Date }) => Promise<HandlerOutcome>;

export interface ProcessorOptions {
  db: Database;
  handler: InboxHandler;
  /** Entries claimed per round. Default: 20. */
  batchSize?: number;
  /** How long a claim lasts before another processor may take the entry. Default: 60 s. */
  leaseSeconds?: number;
  /** Poll interval when idle (ingest in this process also wakes the processor). Default: 1000 ms. */
  pollIntervalMs?: number;
  /** Delay after the 1st, 2nd, … failure; one more failure quarantines. Default: [60, 300, 900] s. */
  retrySchedule?: readonly number[];
  /** Delay before a deferred entry is looked at again (sooner if its entity changes). Default: 30 s. */
  deferDelaySeconds?: number;
  /** How long an entry may stay deferred, from its first deferral, before quarantine. Default: 3600 s. */
  deferDeadlineSeconds?: number;
  /** The clock. Default: the system clock. Tests inject one to stay timing-independent. */
  now?: () => Date;
  logger?: Logger;
  /** Called in the same transaction when an entry is quarantined (alert hook). */
  onQuarantined?: (tx: Transaction, entry: ClaimedEntry, reason: string) => Promise<void>;
}

export interface RunSummary {
  claimed: number;
  processed: number;
  deferred: number;
  failed: number;
  quarantined: number;
  /** Entries whose lease was lost (replayed, or expired and taken over) before completion. */
  lost: number;
}

/** What `runEntry` did with one entry (the cloud processors' path: one queue message, one entry). */
export interface EntryRun {
  /**
   * `settled`: already processed or quarantined, nothing done; `busy`: another processor holds it;
   * `waiting`: it failed and its next retry (INBOX_RETRY_SCHEDULE) is not due yet, so it was not run.
   */
  result: "processed" | "deferred" | "failed" | "quarantined" | "lost" | "busy" | "settled" | "waiting";
  status: InboxStatus;
  /** When the entry is due again (deferred, failed). */
  nextAttemptAt: Date | null;
  lastError: string | null;
}

export const DEFAULT_RETRY_SCHEDULE = [60, 300, 900] as const;

type Row = Record<string, unknown>;
const addSeconds = (d: Date, s: number) => new Date(d.getTime() + s * 1000);
const clip = (text: string, n = 2000) => (text.length > n ? `${text.slice(0, n)}…` : text);

const CLAIM_COLUMNS = `e.id, e.seq, e.partner_name, e.partner_event_id, e.event_type, e.payload, e.received_at,
  e.attempts, e.failures, e.deferrals, e.defer_deadline_at, e.lease_token, e.traceparent`;

function toClaimed(x: Row): ClaimedEntry {
  return {
    id: String(x.id),
    partnerName: String(x.partner_name),
    partnerEventId: String(x.partner_event_id),
    eventType: (x.event_type as string | null) ?? null,
    payload: Buffer.from(x.payload as Uint8Array),
    receivedAt: new Date(x.received_at as string),
    attempts: Number(x.attempts),
    failures: Number(x.failures),
    deferrals: Number(x.deferrals),
    deferDeadlineAt: x.defer_deadline_at ? new Date(x.defer_deadline_at as string) : null,
    leaseToken: String(x.lease_token),
    traceparent: (x.traceparent as string | null | undefined) ?? null,
  };
}

export class InboxProcessor {
  readonly name = "inbox-processor";
  private readonly o: Required<Omit<ProcessorOptions, "logger" | "onQuarantined">> & Pick<ProcessorOptions, "logger" | "onQuarantined">;
  private loop: PollLoop | undefined;

  constructor(options: ProcessorOptions) {
    this.o = {
      batchSize: 20,
      leaseSeconds: 60,
      pollIntervalMs: 1000,
      retrySchedule: DEFAULT_RETRY_SCHEDULE,
      deferDelaySeconds: 30,
      deferDeadlineSeconds: 3600,
      now: () => new Date(),
      ...options,
    };
  }

  /** Claims one batch and processes it. Throws only when the claim itself fails (database down). */
  async runOnce(): Promise<RunSummary> {
    const summary: RunSummary = { claimed: 0, processed: 0, deferred: 0, failed: 0, quarantined: 0, lost: 0 };
    const entries = await this.claim();
    summary.claimed = entries.length;
    for (const entry of entries) {
      const result = await this.processOne(entry);
      summary[result]++;
    }
    return summary;
  }

  /** Runs rounds until one claims nothing (tests and the demo). Returns the summed summary. */
  async drain(maxRounds = 1000): Promise<RunSummary> {
    const total: RunSummary = { claimed: 0, processed: 0, deferred: 0, failed: 0, quarantined: 0, lost: 0 };
    for (let i = 0; i < maxRounds; i++) {
      const r = await this.runOnce();
      for (const k of Object.keys(total) as (keyof RunSummary)[]) total[k] += r[k];
      if (r.claimed === 0) break;
    }
    return total;
  }

  /**
   * Processes one given entry now, unless another processor holds it, it is already settled, or it
   * failed and its retry is not due: a queue's redelivery never runs a failed entry ahead of
   * INBOX_RETRY_SCHEDULE (the inbox sweep runs it when due). A pending or deferred entry is run
   * whatever its time (the queue decides when). For triggers that deliver one entry per message.
   */
  async runEntry(id: string): Promise<EntryRun> {
    const now = this.o.now();
    const r = await this.o.db.query<Row>(
      `UPDATE inbox_entries e
       SET lease_token = gen_random_uuid(), next_attempt_at = $3::timestamptz, attempts = e.attempts + 1
       WHERE e.id = (SELECT id FROM inbox_entries
                     WHERE id = $1 AND status IN ('pending', 'deferred', 'failed')
                       AND (lease_token IS NULL OR next_attempt_at <= $2::timestamptz)
                       AND (status <> 'failed' OR next_attempt_at <= $2::timestamptz)
                     FOR UPDATE SKIP LOCKED)
       RETURNING ${CLAIM_COLUMNS}`,
      [id, now.toISOString(), addSeconds(now, this.o.leaseSeconds).toISOString()],
    );
    const claimed = r.rows[0];
    const result = claimed ? await this.processOne(toClaimed(claimed)) : undefined;
    const after = await this.o.db.query<{ status: InboxStatus; next_attempt_at: Date | string; last_error: string | null }>(
      "SELECT status, next_attempt_at, last_error FROM inbox_entries WHERE id = $1",
      [id],
    );
    const row = after.rows[0];
    if (!row) throw new Error(`No inbox entry ${id}: store it before running it.`);
    const settled = row.status === "processed" || row.status === "quarantined" || row.status === "ignored";
    return {
      result: result ?? (settled ? "settled" : row.status === "failed" && new Date(row.next_attempt_at) > now ? "waiting" : "busy"),
      status: row.status,
      nextAttemptAt: settled ? null : new Date(row.next_attempt_at),
      lastError: row.last_error,
    };
  }

  /** Starts the background loop; local ingest into the same database wakes it. */
  start(): this {
    if (this.loop) return this;
    const loop = startPollLoop({
      name: this.name,
      round: async () => (await this.runOnce()).claimed === this.o.batchSize,
      pollIntervalMs: this.o.pollIntervalMs,
      logger: this.o.logger,
    });
    const unsubscribe = onInboxStored(this.o.db, () => loop.wake());
    this.loop = { wake: () => loop.wake(), stop: async () => { unsubscribe(); await loop.stop(); } };
    return this;
  }

  /** Claims at once instead of waiting for the next poll. */
  wake(): void {
    this.loop?.wake();
  }

  /** Stops claiming and waits for the current round to finish. */
  async stop(): Promise<void> {
    const loop = this.loop;
    this.loop = undefined;
    await loop?.stop();
  }

  private async claim(): Promise<ClaimedEntry[]> {
    const now = this.o.now();
    const r = await this.o.db.query<Row>(
      `WITH due AS (
         SELECT id FROM inbox_entries
         WHERE status IN ('pending', 'deferred', 'failed') AND next_attempt_at <= $1::timestamptz
         ORDER BY next_attempt_at, seq
         LIMIT $2
         FOR UPDATE SKIP LOCKED
       )
       UPDATE inbox_entries e
       SET lease_token = gen_random_uuid(), next_attempt_at = $3::timestamptz, attempts = e.attempts + 1
       FROM due WHERE e.id = due.id
       RETURNING ${CLAIM_COLUMNS}`,
      [now.toISOString(), this.o.batchSize, addSeconds(now, this.o.leaseSeconds).toISOString()],
    );
    // RETURNING has no order: process the batch in arrival order.
    return r.rows.sort((a, b) => Number(a.seq) - Number(b.seq)).map(toClaimed);
  }

  private async processOne(entry: ClaimedEntry): Promise<"processed" | "deferred" | "failed" | "quarantined" | "lost"> {
    // Ids only on the span: never the payload.
    return withSpan(SPANS.inboxProcess, { "webhooks.inbox.id": entry.id, "webhooks.partner": entry.partnerName }, async (span) => {
      const now = this.o.now();
      let handled: HandlerOutcome["kind"] | undefined;
      let result: "processed" | "deferred" | "failed" | "quarantined" | "lost";
      try {
        result = await this.o.db.transaction(async (tx) => {
          const held = await tx.query("SELECT 1 FROM inbox_entries WHERE id = $1 AND lease_token = $2 FOR UPDATE", [entry.id, entry.leaseToken]);
          if (held.rows.length === 0) return "lost" as const;
          const outcome = await this.o.handler(tx, entry, { now });
          handled = outcome.kind;
          return this.record(tx, entry, outcome, now);
        });
      } catch (error) {
        if (isUnavailable(error)) {
          // Not the entry's fault: keep its retry budget; the lease expires and it falls due again.
          failuresOf(this.o.logger).record("processor:database_unavailable", "warn", { inboxId: entry.id }, "database unavailable while processing; the entry will be claimed again");
          throw error;
        }
        result = await this.fail(entry, error, now);
      }
      // Counted once committed, so a rolled-back attempt is never reported as applied.
      if (result !== "lost") recordInboxProcessed(result === "processed" ? (handled === "applied" ? "applied" : "noop") : result);
      span.setAttribute("webhooks.inbox.result", result);
      return result;
    }, entry.traceparent);
  }

  private async record(tx: Transaction, entry: ClaimedEntry, outcome: HandlerOutcome, now: Date) {
    const at = now.toISOString();
    switch (outcome.kind) {
      case "applied":
      case "duplicate":
      case "stale": {
        await tx.query(
          `UPDATE inbox_entries SET status = 'processed', outcome = $2, entity_key = $3, processed_at = $4::timestamptz,
             lease_token = NULL, last_error = $5, quarantine_reason = NULL
           WHERE id = $1`,
          [entry.id, outcome.kind, outcome.entityKey, at, outcome.kind === "applied" ? null : outcome.detail],
        );
        if (outcome.kind === "applied") {
          // The entity changed: entries deferred on it may apply now; look at them at once.
          // SKIP LOCKED: one being processed right now re-reads the entity under its own lock.
          await tx.query(
            `UPDATE inbox_entries SET next_attempt_at = $2::timestamptz
             WHERE id IN (SELECT id FROM inbox_entries
                          WHERE entity_key = $1 AND status = 'deferred' AND lease_token IS NULL
                          FOR UPDATE SKIP LOCKED)`,
            [outcome.entityKey, at],
          );
        }
        return "processed" as const;
      }
      case "deferred": {
        const deadline = entry.deferDeadlineAt ?? addSeconds(now, this.o.deferDeadlineSeconds);
        if (now.getTime() >= deadline.getTime()) {
          const reason = `prerequisite missing until the deferral deadline (${deadline.toISOString()}, after ${entry.deferrals} deferrals): ${outcome.reason}`;
          await this.quarantine(tx, entry, reason, now, "deferral_deadline", outcome.entityKey);
          return "quarantined" as const;
        }
        const next = new Date(Math.min(addSeconds(now, this.o.deferDelaySeconds).getTime(), deadline.getTime()));
        await tx.query(
          `UPDATE inbox_entries SET status = 'deferred', outcome = 'deferred', entity_key = $2, deferrals = deferrals + 1,
             defer_deadline_at = $3::timestamptz, next_attempt_at = $4::timestamptz, last_error = $5, lease_token = NULL
           WHERE id = $1`,
          [entry.id, outcome.entityKey, deadline.toISOString(), next.toISOString(), outcome.reason],
        );
        return "deferred" as const;
      }
      case "rejected":
        await this.quarantine(tx, entry, outcome.reason, now, "rejected", outcome.entityKey ?? null);
        return "quarantined" as const;
      case "ignored":
        await tx.query(
          `UPDATE inbox_entries SET status = 'ignored', outcome = 'ignored', processed_at = $2::timestamptz, lease_token = NULL,
             last_error = $3, quarantine_reason = NULL
           WHERE id = $1`,
          [entry.id, at, outcome.reason],
        );
        return "processed" as const;
    }
  }

  private async quarantine(tx: Transaction, entry: ClaimedEntry, reason: string, now: Date, outcome: string, entityKey: string | null) {
    await tx.query(
      `UPDATE inbox_entries SET status = 'quarantined', outcome = $2, quarantine_reason = $3, entity_key = COALESCE($4, entity_key),
         processed_at = $5::timestamptz, lease_token = NULL
       WHERE id = $1`,
      [entry.id, outcome, clip(reason), entityKey, now.toISOString()],
    );
    this.o.logger?.warn({ inboxId: entry.id, partner: entry.partnerName, eventId: entry.partnerEventId, reason }, "inbox entry quarantined");
    await this.o.onQuarantined?.(tx, entry, reason);
  }

  /** The handler threw: its transaction rolled back; count the failure under the lease. */
  private async fail(entry: ClaimedEntry, error: unknown, now: Date): Promise<"failed" | "quarantined" | "lost"> {
    const failures = entry.failures + 1;
    const message = clip(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    const delay = this.o.retrySchedule[failures - 1];
    return this.o.db.transaction(async (tx) => {
      const held = await tx.query("SELECT 1 FROM inbox_entries WHERE id = $1 AND lease_token = $2 FOR UPDATE", [entry.id, entry.leaseToken]);
      if (held.rows.length === 0) return "lost" as const;
      await tx.query("UPDATE inbox_entries SET failures = $2, last_error = $3 WHERE id = $1", [entry.id, failures, message]);
      if (delay === undefined) {
        await this.quarantine(tx, entry, `failed ${failures} times (retry schedule exhausted); last error: ${message}`, now, "failed", null);
        return "quarantined" as const;
      }
      await tx.query(
        "UPDATE inbox_entries SET status = 'failed', next_attempt_at = $2::timestamptz, lease_token = NULL WHERE id = $1",
        [entry.id, addSeconds(now, delay).toISOString()],
      );
      this.o.logger?.info({ inboxId: entry.id, failures, retryInSeconds: delay }, "inbox entry failed; retry scheduled");
      return "failed" as const;
    });
  }
}
