/**
 * `ingest(deps, partner, headers, rawBody)`: the inbound boundary without a framework. The local
 * route calls it, and so can a cloud function: it takes the exact bytes received and answers a
 * status, a JSON body and headers.
 *
 * | case                                   | status | stored |
 * |----------------------------------------|--------|--------|
 * | unknown partner                        | 404    | no     |
 * | body over the limit                    | 413    | no     |
 * | bad/missing signature, stale timestamp | 401    | no     |
 * | body not a JSON object, no event id    | 400    | no     |
 * | database unavailable or failing        | 503 + Retry-After | no (the sender retries) |
 * | new event                              | 202    | yes, before the answer |
 * | duplicate (same bytes)                 | 200    | nothing changes |
 * | same id, different bytes               | 200, `payloadMismatch: true` | the bytes are kept aside and flagged; the original stays the one processed |
 */
import type { Logger } from "pino";
import type { Queryable } from "../db/port.js";
import { isUnavailable } from "../db/port.js";
import type { Database } from "../db/port.js";
import { storeAndForward } from "./forward.js";
import { signalInboxStored, storeInboxEntry, type NewInboxEntry, type StoreResult } from "./inbox.js";
import { screenInbound } from "./screen.js";
import type { HeaderBag, PartnerConfig } from "./verify/index.js";
import { failuresOf } from "../telemetry/repeatedFailures.js";
import { activeTraceparent } from "../telemetry/telemetry.js";

export interface IngestDeps {
  /** Where entries are stored: a pool (each statement commits on its own). */
  db: Queryable;
  partners: ReadonlyMap<string, PartnerConfig>;
  /** Largest body accepted, in bytes. */
  maxBodyBytes: number;
  /** The clock (received_at, signature tolerance). Default: the system clock. */
  now?: () => Date;
  logger?: Logger;
  /**
   * How an entry is made durable. Default: `storeInboxEntry(db, entry)`, one INSERT per event;
   * `createGroupCommit(db).store` shares INSERTs between concurrent requests. Either must resolve
   * only once the entry is committed, and reject when it may not be.
   */
  store?: (entry: NewInboxEntry) => Promise<StoreResult>;
}

export interface IngestResponse {
  status: number;
  headers: Record<string, string>;
  body: IngestAccepted | IngestError;
}

export interface IngestAccepted {
  received: true;
  /** The inbox entry that holds the event. */
  inboxId: string;
  duplicate: boolean;
  /** Present when the same event id came again with different bytes (flagged, not applied). */
  payloadMismatch?: true;
}

export interface IngestError {
  error: { code: string; message: string };
}

/** Seconds a sender should wait after a 503. */
export const RETRY_AFTER_SECONDS = 5;

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

function refuse(status: number, code: string, message: string, extra: Record<string, string> = {}): IngestResponse {
  return { status, headers: { ...JSON_HEADERS, ...extra }, body: { error: { code, message } } };
}

function transactional(db: Queryable): Database {
  if (typeof (db as Partial<Database>).transaction !== "function") throw new Error("ingest: a forwarding partner needs deps.db to be a Database (with transaction)");
  return db as Database;
}

/** Verifies, stores at most once, and says what to answer. Never throws. */
export async function ingest(deps: IngestDeps, partnerName: string, headers: HeaderBag, rawBody: Buffer): Promise<IngestResponse> {
  const now = deps.now?.() ?? new Date();
  const screened = screenInbound(deps.partners, deps.maxBodyBytes, partnerName, headers, rawBody, now);
  if (!screened.ok) return refuse(screened.status, screened.code, screened.message);
  const { partner, eventId, eventType } = screened;

  try {
    // The ingest span's trace context (null without an SDK), so processing continues the same trace.
    const entry: NewInboxEntry = { partnerName: partner.name, partnerEventId: eventId, eventType, payload: rawBody, signatureVerified: true, receivedAt: now, traceparent: activeTraceparent() };
    // A forwarding partner: the inbox row and the outbox event commit together (forward.ts).
    const stored = await (partner.forward ? storeAndForward(transactional(deps.db), partner, entry)
      : deps.store ? deps.store(entry) : storeInboxEntry(deps.db, entry));
    if (stored.kind === "stored") {
      signalInboxStored(deps.db);
      return { status: 202, headers: JSON_HEADERS, body: { received: true, inboxId: stored.id, duplicate: false } };
    }
    if (stored.kind === "mismatch") {
      deps.logger?.warn({ partner: partner.name, eventId: eventId, inboxId: stored.id }, "payload mismatch: same event id, different bytes; kept aside, not applied");
      return { status: 200, headers: JSON_HEADERS, body: { received: true, inboxId: stored.id, duplicate: true, payloadMismatch: true } };
    }
    return { status: 200, headers: JSON_HEADERS, body: { received: true, inboxId: stored.id, duplicate: true } };
  } catch (error) {
    // Whatever went wrong, the event may not be stored: never acknowledge it, ask for a retry.
    const unavailable = isUnavailable(error);
    failuresOf(deps.logger).record(unavailable ? "ingest:database_unavailable" : "ingest:storage_failed", unavailable ? "warn" : "error",
      { err: error, partner: partner.name, eventId: eventId }, "inbound event not stored; answered 503");
    return refuse(
      503,
      unavailable ? "database_unavailable" : "storage_failed",
      unavailable ? "The database is unavailable; the event was not stored. Retry later." : "The event could not be stored. Retry later.",
      { "retry-after": String(RETRY_AFTER_SECONDS) },
    );
  }
}
