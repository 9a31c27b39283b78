/**
 * Shared pieces of the inbound tests: a Standard Webhooks partner signed with the reference
 * `standardwebhooks` library (a real sender, not our own signer), order events, a test clock.
 */
import { Webhook } from "standardwebhooks";
import type { Database } from "../../shared/db/port.js";
import { parsePartners } from "../../shared/inbound/verify/index.js";
import { InboxProcessor, type InboxHandler, type ProcessorOptions } from "../../shared/inbound/processor.js";
import { createDispatchHandler } from "../../shared/inbound/dispatch.js";
import { entityState } from "../../shared/inbound/entities.js";
import orderHandlers from "../../examples/orders/handlers.js";

/** The inbox handler over the example order domain (examples/orders), as the platform dispatches it. */
export const orderHandler = (): InboxHandler => createDispatchHandler(orderHandlers);

export const SECRET = `whsec_${Buffer.from("inbound-tests-secret-32-bytes!!!").toString("base64")}`;
export const PARTNERS_JSON = JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [SECRET] } });
export const partners = parsePartners(PARTNERS_JSON);
const signer = new Webhook(SECRET);

/** A clock tests move by hand, so nothing depends on real durations. */
export class TestClock {
  constructor(public current = new Date()) {}
  now = (): Date => this.current;
  advance(seconds: number): Date {
    this.current = new Date(this.current.getTime() + seconds * 1000);
    return this.current;
  }
}

/** Headers and bytes of a delivery as a Standard Webhooks sender makes them. */
export function signed(id: string, body: string, at = new Date()): { headers: Record<string, string>; body: Buffer } {
  return {
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": signer.sign(id, at, body),
    },
    body: Buffer.from(body),
  };
}

export function orderEvent(orderId: string, type: string, data: Record<string, unknown> = {}): string {
  return JSON.stringify({ type, timestamp: "2026-01-01T00:00:00Z", data: { order_id: orderId, ...data } });
}

/** A processor over the order domain with the test clock and small, explicit settings. */
export function orderProcessor(db: Database, clock: TestClock, extra: Partial<ProcessorOptions> & { handler?: InboxHandler } = {}): InboxProcessor {
  return new InboxProcessor({ db, handler: orderHandler(), now: clock.now, ...extra });
}

/** Empties the inbound tables between tests sharing one database. */
export async function resetInbound(db: Database): Promise<void> {
  await db.query("TRUNCATE inbox_entries, inbox_payload_conflicts, inbox_replays, inbound_entities, inbound_transitions");
}

export async function orderState(db: Database, id: string): Promise<string | null> {
  return entityState(db, "order", id);
}
