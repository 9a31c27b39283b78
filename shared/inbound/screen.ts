/**
 * The checks every inbound boundary makes before anything is stored, local or cloud:
 * known partner (404), size (413), signature on the exact bytes (401), JSON and event id (400).
 */
import { verifyWebhook, type HeaderBag, type PartnerConfig } from "./verify/index.js";

export interface Screened {
  ok: true;
  partner: PartnerConfig;
  eventId: string;
  eventType: string | null;
}

export interface Refused {
  ok: false;
  status: number;
  code: string;
  message: string;
}

export function screenInbound(
  partners: ReadonlyMap<string, PartnerConfig>,
  maxBodyBytes: number,
  partnerName: string,
  headers: HeaderBag,
  rawBody: Buffer,
  now: Date,
): Screened | Refused {
  const partner = partners.get(partnerName);
  if (!partner) {
    return { ok: false, status: 404, code: "unknown_partner", message: `No partner named "${partnerName.slice(0, 64)}" is configured; check the URL (POST /webhooks/<partner>) or add the partner to PARTNERS.` };
  }
  if (rawBody.length > maxBodyBytes) {
    return { ok: false, status: 413, code: "payload_too_large", message: `Body is ${rawBody.length} bytes; the limit is ${maxBodyBytes}.` };
  }
  const verdict = verifyWebhook(partner, headers, rawBody, Math.floor(now.getTime() / 1000));
  if (!verdict.ok) return { ok: false, status: verdict.status, code: verdict.code, message: verdict.reason };
  return { ok: true, partner, eventId: verdict.eventId, eventType: verdict.eventType };
}
