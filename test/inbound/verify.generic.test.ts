/**
 * generic-hmac: configurations modelled on real partners that follow no standard. Expected
 * signatures are computed with WebCrypto (crypto.subtle), not with the code under test.
 */
import { describe, expect, it } from "vitest";
import { parsePartners, verifyWebhook, type PartnerConfig, type VerifyResult } from "../../shared/inbound/verify/index.js";

const NOW = 1_764_000_000;

async function mac(hash: "SHA-256" | "SHA-512" | "SHA-1", key: Uint8Array, data: Uint8Array): Promise<Buffer> {
  const k = await crypto.subtle.importKey("raw", new Uint8Array(key), { name: "HMAC", hash }, false, ["sign"]);
  return Buffer.from(await crypto.subtle.sign("HMAC", k, new Uint8Array(data)));
}
const bytes = (text: string) => new TextEncoder().encode(text);

/** One partner from JSON, as a user would configure it. */
function partner(name: string, config: Record<string, unknown>): PartnerConfig {
  const p = parsePartners(JSON.stringify({ [name]: { scheme: "generic-hmac", ...config } })).get(name);
  if (!p) throw new Error("partner not parsed");
  return p;
}

function code(result: VerifyResult): string {
  return result.ok ? "ok" : `${result.status} ${result.code}`;
}

describe("generic-hmac", () => {
  it("Shopify-like: base64 HMAC-SHA256 of the body, id and type from headers", async () => {
    const p = partner("shop", { secrets: ["shpss_secret"], signatureHeader: "X-Shopify-Hmac-Sha256", encoding: "base64", eventIdHeader: "X-Shopify-Webhook-Id", eventTypeHeader: "X-Shopify-Topic" });
    const body = '{"id":820982911946154500,"email":"jon@example.com"}';
    const sig = (await mac("SHA-256", bytes("shpss_secret"), bytes(body))).toString("base64");
    const headers = { "x-shopify-hmac-sha256": sig, "x-shopify-webhook-id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "x-shopify-topic": "orders/create" };
    expect(verifyWebhook(p, headers, Buffer.from(body), NOW)).toEqual({ ok: true, eventId: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", eventType: "orders/create" });
    expect(code(verifyWebhook(p, headers, Buffer.from(body.replace("jon", "eve")), NOW))).toBe("401 signature_mismatch");
    const { "x-shopify-webhook-id": _, ...noId } = headers;
    const missing = verifyWebhook(p, noId, Buffer.from(body), NOW);
    expect(code(missing)).toBe("400 missing_event_id");
    expect(!missing.ok && missing.reason).toMatch(/X-Shopify-Webhook-Id/);
  });

  it("Slack-like: v0=<hex> over v0:{timestamp}:{body}, timestamp header, id and type from JSON paths", async () => {
    const p = partner("slack", {
      secrets: ["8f742231b10e8888abcd99yyyzzz85a5"], signatureHeader: "X-Slack-Signature", prefix: "v0=",
      timestampHeader: "X-Slack-Request-Timestamp", signedPayload: "v0:{timestamp}:{body}", toleranceSeconds: 60,
      eventIdField: "event_id", eventTypeField: "event.type",
    });
    const body = '{"event_id":"Ev08MFMKH6","event":{"type":"app_mention"}}';
    const sign = async (at: number) => `v0=${(await mac("SHA-256", bytes("8f742231b10e8888abcd99yyyzzz85a5"), bytes(`v0:${at}:${body}`))).toString("hex")}`;
    const headers = { "x-slack-signature": await sign(NOW), "x-slack-request-timestamp": String(NOW) };
    expect(verifyWebhook(p, headers, Buffer.from(body), NOW)).toEqual({ ok: true, eventId: "Ev08MFMKH6", eventType: "app_mention" });
    // The timestamp is signed: changing it breaks the signature rather than the tolerance.
    expect(code(verifyWebhook(p, { ...headers, "x-slack-request-timestamp": String(NOW + 1) }, Buffer.from(body), NOW))).toBe("401 signature_mismatch");
    const stale = { "x-slack-signature": await sign(NOW - 61), "x-slack-request-timestamp": String(NOW - 61) };
    const verdict = verifyWebhook(p, stale, Buffer.from(body), NOW);
    expect(code(verdict)).toBe("401 timestamp_too_old");
    expect(!verdict.ok && verdict.reason).toMatch(/tolerance is 60 s/);
    expect(code(verifyWebhook(p, { "x-slack-signature": await sign(NOW) }, Buffer.from(body), NOW))).toBe("401 missing_timestamp");
  });

  it("sha512, base64url, {id}.{timestamp}.{body} with milliseconds, base64 secrets", async () => {
    const key = Buffer.alloc(32, 0xab);
    const p = partner("acme", {
      secrets: [key.toString("base64")], secretEncoding: "base64", algorithm: "sha512", encoding: "base64url",
      signatureHeader: "Acme-Signature", timestampHeader: "Acme-Timestamp", timestampUnit: "milliseconds",
      signedPayload: "{id}.{timestamp}.{body}", eventIdHeader: "Acme-Event-Id",
    });
    const body = '{"n":1}';
    const ms = NOW * 1000 + 123;
    const sig = (await mac("SHA-512", key, bytes(`evt-9.${ms}.${body}`))).toString("base64url");
    const headers = { "acme-signature": sig, "acme-timestamp": String(ms), "acme-event-id": "evt-9" };
    expect(verifyWebhook(p, headers, Buffer.from(body), NOW)).toEqual({ ok: true, eventId: "evt-9", eventType: null });
    // {id} is signed, so a replay under a fresh id fails.
    expect(code(verifyWebhook(p, { ...headers, "acme-event-id": "evt-10" }, Buffer.from(body), NOW))).toBe("401 signature_mismatch");
    expect(code(verifyWebhook(p, headers, Buffer.from(body), NOW + 301))).toBe("401 timestamp_too_old");
  });

  it("legacy sha1 with a prefix; several signatures in one header (rotation on the sender's side)", async () => {
    const p = partner("legacy", { secrets: ["old", "new"], signatureHeader: "X-Sig", algorithm: "sha1", prefix: "sha1=", eventIdField: "meta.id" });
    const body = '{"meta":{"id":12345}}';
    const withOld = `sha1=${(await mac("SHA-1", bytes("old"), bytes(body))).toString("hex")}`;
    const withUnknown = `sha1=${(await mac("SHA-1", bytes("unknown"), bytes(body))).toString("hex")}`;
    // A JSON integer id is accepted and written in decimal.
    expect(verifyWebhook(p, { "x-sig": `${withUnknown}, ${withOld}` }, Buffer.from(body), NOW)).toEqual({ ok: true, eventId: "12345", eventType: null });
    expect(code(verifyWebhook(p, { "x-sig": withUnknown }, Buffer.from(body), NOW))).toBe("401 signature_mismatch");
    expect(code(verifyWebhook(p, { "x-sig": withOld.slice(5) }, Buffer.from(body), NOW))).toBe("401 malformed_signature");
    expect(code(verifyWebhook(p, {}, Buffer.from(body), NOW))).toBe("401 missing_signature");
  });

  it("an id field that is missing, null or an object is a 400 naming the field", async () => {
    const p = partner("acme", { secrets: ["s"], signatureHeader: "X-Sig", eventIdField: "data.id" });
    for (const body of ['{"data":{}}', '{"data":{"id":null}}', '{"data":{"id":{"x":1}}}', '{"data":{"id":""}}', '{"data":[{"id":"a"}]}']) {
      const sig = (await mac("SHA-256", bytes("s"), bytes(body))).toString("hex");
      const verdict = verifyWebhook(p, { "x-sig": sig }, Buffer.from(body), NOW);
      expect(code(verdict), body).toBe("400 missing_event_id");
      expect(!verdict.ok && verdict.reason).toMatch(/JSON field data\.id/);
    }
  });
});
