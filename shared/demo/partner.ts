/**
 * The demo's sample partner: a shop that posts signed Standard Webhooks about three orders to
 * `POST /webhooks/demo-shop`, the way real senders do — some events twice (a sender retrying
 * after a lost 2xx) and some before the event they depend on (networks reorder).
 *
 * Order A arrives in order; order B is shipped before it is paid; order C is paid before it is
 * created, then cancelled. The reconciler defers the early ones and applies them when their
 * prerequisite lands, so all three end where the in-order story ends.
 */
import { sign } from "../outbound/signature.js";

export const DEMO_PARTNER = "demo-shop";

export interface PartnerEvent {
  /** The partner's event id (`webhook-id`). */
  id: string;
  type: string;
  orderId: string;
}

export interface PartnerReport {
  /** Requests sent, duplicates included. */
  sent: number;
  /** Of those, re-sends of an event already sent. */
  duplicatesSent: number;
  /** Answered 2xx. */
  accepted: number;
  /** Answered 2xx with `duplicate: true`. */
  acknowledgedAsDuplicate: number;
  /** Distinct inbox entries the platform reported. */
  inboxIds: Set<string>;
  /** Orders and the state the in-order story ends in. */
  expectedOrders: Record<string, string>;
}

/** The story: two waves, the first holding the events that arrive too early. */
export function demoStory(runId: string): { early: PartnerEvent[]; rest: PartnerEvent[]; duplicates: PartnerEvent[]; expectedOrders: Record<string, string> } {
  const a = `${runId}-A`, b = `${runId}-B`, c = `${runId}-C`;
  const ev = (orderId: string, type: string): PartnerEvent => ({ id: `${orderId}-${type.split(".")[1]}`, type, orderId });
  const early = [ev(b, "order.shipped"), ev(c, "order.paid")];
  const rest = [
    ev(a, "order.created"), ev(a, "order.paid"), ev(b, "order.created"), ev(c, "order.created"),
    ev(a, "order.shipped"), ev(b, "order.paid"), ev(c, "order.cancelled"), ev(a, "order.delivered"),
  ];
  const duplicates = [ev(a, "order.paid"), ev(b, "order.shipped")];
  return { early, rest, duplicates, expectedOrders: { [a]: "delivered", [b]: "shipped", [c]: "cancelled" } };
}

/** Posts one signed event; returns the platform's answer. */
async function post(baseUrl: string, secret: string, e: PartnerEvent): Promise<{ status: number; body: { inboxId?: string; duplicate?: boolean } }> {
  const body = JSON.stringify({ type: e.type, data: { order_id: e.orderId } });
  const timestamp = Math.floor(Date.now() / 1000);
  const res = await fetch(`${baseUrl}/webhooks/${DEMO_PARTNER}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": e.id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": `v1,${sign(secret, e.id, timestamp, body)}`,
    },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as { inboxId?: string; duplicate?: boolean }) : {} };
}

/**
 * Sends the story: the early wave, a pause so the processor sees (and defers) it, then the rest
 * with the duplicates mixed in.
 */
export async function runPartner(baseUrl: string, secret: string, runId: string, options: { pauseMs?: number } = {}): Promise<PartnerReport> {
  const story = demoStory(runId);
  const report: PartnerReport = { sent: 0, duplicatesSent: 0, accepted: 0, acknowledgedAsDuplicate: 0, inboxIds: new Set(), expectedOrders: story.expectedOrders };
  const send = async (e: PartnerEvent, duplicate: boolean) => {
    const r = await post(baseUrl, secret, e);
    report.sent++;
    if (duplicate) report.duplicatesSent++;
    if (r.status >= 200 && r.status < 300) {
      report.accepted++;
      if (r.body.duplicate) report.acknowledgedAsDuplicate++;
      if (r.body.inboxId) report.inboxIds.add(r.body.inboxId);
    } else {
      throw new Error(`the platform answered ${r.status} to ${e.id}; expected 2xx`);
    }
  };
  for (const e of story.early) await send(e, false);
  await new Promise((r) => setTimeout(r, options.pauseMs ?? 1500));
  const rest = [...story.rest];
  // A duplicate right after its original, the way a sender's retry comes.
  for (const e of rest) {
    await send(e, false);
    const dup = story.duplicates.find((d) => d.id === e.id);
    if (dup) await send(dup, true);
  }
  // The early shipped event of order B comes again too (it was never acknowledged "in time").
  for (const d of story.duplicates.filter((x) => !rest.some((e) => e.id === x.id))) await send(d, true);
  return report;
}
