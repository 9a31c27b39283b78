/**
 * Issue 17, Must-show 3 (inbound): a Standard Webhooks sender that signs only `v1a` (ed25519) is
 * accepted with its `whpk_` public key in the partner's secrets. The sender here is tweetnacl, an
 * ed25519 implementation independent of node:crypto (its own curve arithmetic and SHA-512), signing
 * the spec's content `{msg_id}.{timestamp}.{payload}`. Each way such a request can be wrong is
 * refused with its own reason.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { body, other, sender, signedHeaders as signedAt, whpk } from "./support/v1aSender.js";
import { parsePartners, verifyWebhook, type PartnerConfig, type VerifyResult } from "../../shared/inbound/verify/index.js";

const NOW = 1_764_000_000;
const HMAC_SECRET = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
const signedHeaders = (opts: Partial<Parameters<typeof signedAt>[0]> = {}) => signedAt({ ts: NOW, ...opts });

function rejected(result: VerifyResult, status: number, code: string, reasonPart: string | RegExp) {
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect({ status: result.status, code: result.code }).toEqual({ status, code });
  expect(result.reason).toMatch(reasonPart);
}

describe("Standard Webhooks v1a (ed25519), inbound", () => {
  const partner: PartnerConfig = { name: "acme", scheme: "standard-webhooks", secrets: [whpk(sender)] };

  it("accepts a sender that signs only v1a, verified with its whpk_ public key", () => {
    expect(verifyWebhook(partner, signedHeaders(), Buffer.from(body), NOW)).toEqual({ ok: true, eventId: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", eventType: "invoice.paid" });
  });

  it("is configured through PARTNERS like any secret: whpk_ keys are accepted, a malformed one is refused by name", () => {
    const partners = parsePartners(JSON.stringify({ acme: { scheme: "standard-webhooks", secrets: [whpk(sender)] } }));
    expect(verifyWebhook(partners.get("acme")!, signedHeaders(), Buffer.from(body), NOW).ok).toBe(true);
    expect(() => parsePartners(JSON.stringify({ acme: { scheme: "standard-webhooks", secrets: [`whpk_${Buffer.alloc(31, 1).toString("base64")}`] } })))
      .toThrow(/acme.*secrets\[0\].*whpk_ ed25519 public key/s);
  });

  it("rotation: with two public keys listed, a signature by either verifies", () => {
    const rotating = { ...partner, secrets: [whpk(other), whpk(sender)] };
    expect(verifyWebhook(rotating, signedHeaders(), Buffer.from(body), NOW).ok).toBe(true);
    expect(verifyWebhook(rotating, signedHeaders({ pair: other }), Buffer.from(body), NOW).ok).toBe(true);
  });

  it("a header with v1 and v1a entries verifies with either a whsec_ secret or a whpk_ key", () => {
    const v1a = signedHeaders();
    const key = Buffer.from(HMAC_SECRET.slice(6), "base64");
    const v1 = createHmac("sha256", key).update(`${v1a["webhook-id"]}.${NOW}.${body}`).digest("base64");
    const both = { ...v1a, "webhook-signature": `v1,${v1} ${v1a["webhook-signature"]}` };
    expect(verifyWebhook({ ...partner, secrets: [HMAC_SECRET] }, both, Buffer.from(body), NOW).ok).toBe(true);
    expect(verifyWebhook(partner, both, Buffer.from(body), NOW).ok).toBe(true);
  });

  it("refuses a signature by another key", () => {
    rejected(verifyWebhook(partner, signedHeaders({ pair: other }), Buffer.from(body), NOW), 401, "signature_mismatch", /matches this body/);
  });

  it("refuses a tampered body, id or timestamp", () => {
    const h = signedHeaders();
    rejected(verifyWebhook(partner, h, Buffer.from(body.replace("4200", "4201")), NOW), 401, "signature_mismatch", /matches this body/);
    rejected(verifyWebhook(partner, { ...h, "webhook-id": "msg_other" }, Buffer.from(body), NOW), 401, "signature_mismatch", /matches this body/);
    rejected(verifyWebhook(partner, { ...h, "webhook-timestamp": String(NOW + 1) }, Buffer.from(body), NOW), 401, "signature_mismatch", /matches this body/);
  });

  it("refuses a stale or future timestamp, even correctly signed", () => {
    rejected(verifyWebhook(partner, signedHeaders({ ts: NOW - 301 }), Buffer.from(body), NOW), 401, "timestamp_too_old", /301 s old/);
    rejected(verifyWebhook(partner, signedHeaders({ ts: NOW + 301 }), Buffer.from(body), NOW), 401, "timestamp_in_future", /./);
    expect(verifyWebhook(partner, signedHeaders({ ts: NOW - 299 }), Buffer.from(body), NOW).ok).toBe(true);
  });

  it("a v1a header for a partner configured with only v1 (whsec_) secrets is refused, saying to add the whpk_ key", () => {
    rejected(verifyWebhook({ ...partner, secrets: [HMAC_SECRET] }, signedHeaders(), Buffer.from(body), NOW), 401, "signature_mismatch", /only v1a .*no whpk_ public key/);
  });

  it("a v1 header for a partner configured with only whpk_ keys is refused, saying to add the whsec_ secret", () => {
    const v1 = createHmac("sha256", Buffer.from(HMAC_SECRET.slice(6), "base64")).update(`msg_1.${NOW}.${body}`).digest("base64");
    rejected(verifyWebhook(partner, { "webhook-id": "msg_1", "webhook-timestamp": String(NOW), "webhook-signature": `v1,${v1}` }, Buffer.from(body), NOW),
      401, "signature_mismatch", /only v1 \(HMAC\).*whsec_/);
  });

  it("a v1a signature is never checked as an HMAC, nor a v1 HMAC as ed25519 (the version decides the key)", () => {
    const h = signedHeaders();
    // The valid ed25519 signature relabelled v1, for a partner holding the same key material both ways.
    rejected(verifyWebhook({ ...partner, secrets: [whpk(sender), HMAC_SECRET] }, { ...h, "webhook-signature": h["webhook-signature"].replace("v1a,", "v1,") }, Buffer.from(body), NOW),
      401, "signature_mismatch", /matches this body/);
  });

  it("refuses malformed v1a signatures: wrong length, not base64, truncated", () => {
    const good = signedHeaders()["webhook-signature"].slice(4);
    for (const sig of [Buffer.alloc(63, 1).toString("base64"), `${good.slice(0, 20)}!${good.slice(21)}`, good.slice(0, 40)]) {
      const result = verifyWebhook(partner, signedHeaders({ signature: `v1a,${sig}` }), Buffer.from(body), NOW);
      expect(result.ok).toBe(false);
    }
    rejected(verifyWebhook(partner, signedHeaders({ signature: "v1a,!!!!" }), Buffer.from(body), NOW), 401, "malformed_signature", /v1a,<base64>/);
  });

  it("refuses a header sent twice (Node joins them with \", \")", () => {
    const h = signedHeaders();
    rejected(verifyWebhook(partner, { ...h, "webhook-signature": `${h["webhook-signature"]}, ${h["webhook-signature"]}` }, Buffer.from(body), NOW), 401, "ambiguous_header", /more than once/);
  });
});
