/**
 * generic-hmac: configurations modelled on real partners that follow no standard. Expected
 * signatures are computed with WebCrypto (crypto.subtle), not with the code under test.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../shared/config.js";
import { genericHmac, jsonPath } from "../../shared/inbound/verify/genericHmac.js";
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

  it("a timestamp header without a template signs {timestamp}.{body}, as parsePartners and as a bare config", async () => {
    const config = { secrets: ["s"], signatureHeader: "X-Sig", timestampHeader: "X-Ts", eventIdField: "id" };
    const body = '{"id":"e1"}';
    const headers = { "x-sig": (await mac("SHA-256", bytes("s"), bytes(`${NOW}.${body}`))).toString("hex"), "x-ts": String(NOW) };
    expect(code(verifyWebhook(partner("ts", config), headers, Buffer.from(body), NOW))).toBe("ok");
    expect(code(verifyWebhook({ name: "ts", scheme: "generic-hmac", ...config }, headers, Buffer.from(body), NOW))).toBe("ok");
  });

  it("says what each refusal means", async () => {
    const p = partner("acme", {
      secrets: ["s"], signatureHeader: "X-Sig", prefix: "sha256=", timestampHeader: "X-Ts", signedPayload: "{id}.{timestamp}.{body}",
      eventIdHeader: "X-Id", eventTypeHeader: "X-Type",
    });
    const body = '{"n":1}';
    const sig = `sha256=${(await mac("SHA-256", bytes("s"), bytes(`e1.${NOW}.${body}`))).toString("hex")}`;
    const good = { "x-sig": sig, "x-ts": String(NOW), "x-id": "e1", "x-type": "t" };
    const reason = (headers: Record<string, string | string[]>, q: PartnerConfig = p) => { const r = verifyWebhook(q, headers, Buffer.from(body), NOW); return r.ok ? "ok" : `${r.status} ${r.code}: ${r.reason}`; };
    const without = (name: string) => Object.fromEntries(Object.entries(good).filter(([k]) => k !== name));
    expect(reason(good)).toBe("ok");
    expect(reason(without("x-ts"))).toBe("401 missing_timestamp: The X-Ts header is missing: the partner signs the time of sending.");
    expect(reason(without("x-id"))).toBe("401 missing_header: The X-Id header is missing: the event id is part of what is signed.");
    expect(reason(without("x-sig"))).toBe("401 missing_signature: The X-Sig header is missing: sign the request with one of the partner's secrets.");
    expect(reason({ ...good, "x-ts": "+1764000000" })).toBe("401 invalid_timestamp: The X-Ts header must be whole seconds since the epoch.");
    expect(reason({ ...good, "x-ts": "1e3" }, { ...p, timestampUnit: "milliseconds" })).toBe("401 invalid_timestamp: The X-Ts header must be whole milliseconds since the epoch.");
    expect(reason({ ...good, "x-sig": "sha256=zz" })).toBe("401 malformed_signature: The X-Sig header holds no signature of the form sha256=<hex>.");
    expect(reason({ ...good, "x-sig": "zz" }, { ...p, prefix: undefined, encoding: "base64" })).toBe("401 malformed_signature: The X-Sig header holds no signature of the form <base64>.");
    expect(reason({ ...good, "x-sig": `sha256=${"0".repeat(64)}` })).toBe("401 signature_mismatch: No signature in X-Sig matches this body with any of the partner's current secrets.");
    expect(reason({ ...good, "x-type": ["a", "b"] })).toBe("400 ambiguous_header: The X-Type header was sent more than once; send it exactly once.");
    expect(reason({ ...good, "x-id": "e".repeat(256) })).toMatch(/^401 signature_mismatch/);
  });

  it("identify: the id header's absence and an over-long id are 400s naming the header", () => {
    const p = partner("acme", { secrets: ["s"], signatureHeader: "X-Sig", eventIdHeader: "X-Id" });
    expect(genericHmac.identify(p, {}, {})).toEqual({ ok: false, status: 400, code: "missing_event_id", reason: "The X-Id header is missing: the partner sends its event id there." });
    expect(genericHmac.identify(p, { "x-id": "e1" }, {})).toEqual({ id: "e1", idSource: "header X-Id", type: null });
    expect(genericHmac.identify(partner("b", { secrets: ["s"], signatureHeader: "X-Sig", eventIdField: "data.id", eventTypeField: "data.type" }), {}, { data: { id: "e2", type: "t" } }))
      .toEqual({ id: "e2", idSource: "JSON field data.id", type: "t" });
    expect(genericHmac.identify({ name: "c", scheme: "generic-hmac", secrets: ["s"], signatureHeader: "X-Sig" }, {}, { id: "e3" })).toEqual({ id: "e3", idSource: "JSON field id", type: null });
  });

  it("a partner built without signatureHeader is a configuration error, not a refusal", () => {
    const bare: PartnerConfig = { name: "bare", scheme: "generic-hmac", secrets: ["s"] };
    expect(() => verifyWebhook(bare, {}, Buffer.from("{}"), NOW)).toThrow(ConfigError);
    expect(() => verifyWebhook(bare, {}, Buffer.from("{}"), NOW)).toThrow('Partner "bare": generic-hmac needs signatureHeader; build partners with parsePartners.');
    const signs = (signedPayload: string): PartnerConfig => ({ ...bare, signatureHeader: "X-Sig", signedPayload });
    expect(() => verifyWebhook(signs("{timestamp}.{body}"), { "x-sig": "00" }, Buffer.from("{}"), NOW)).toThrow(
      'Partner "bare": signedPayload uses {timestamp}, which needs timestampHeader; build partners with parsePartners.',
    );
    expect(() => verifyWebhook(signs("{id}.{body}"), { "x-sig": "00" }, Buffer.from("{}"), NOW)).toThrow(
      'Partner "bare": signedPayload uses {id}, which needs eventIdHeader; build partners with parsePartners.',
    );
  });

  it("signatures are separated by spaces or commas, or by spaces only when the prefix holds a comma", async () => {
    const body = '{"id":"e1"}';
    const hex = (await mac("SHA-256", bytes("s"), bytes(body))).toString("hex");
    const b64 = (await mac("SHA-256", bytes("s"), bytes(body))).toString("base64");
    const plain = partner("plain", { secrets: ["s"], signatureHeader: "X-Sig", eventIdField: "id" });
    for (const header of [`${"0".repeat(64)},${hex}`, `${"0".repeat(64)} ${hex}`, `${"0".repeat(64)} ,  ${hex}`, `zz,${hex}`]) {
      expect(code(verifyWebhook(plain, { "x-sig": header }, Buffer.from(body), NOW)), header).toBe("ok");
    }
    const comma = partner("comma", { secrets: ["s"], signatureHeader: "X-Sig", prefix: "v1,", encoding: "base64", eventIdField: "id" });
    expect(code(verifyWebhook(comma, { "x-sig": `v1,${Buffer.alloc(32).toString("base64")}  v1,${b64}` }, Buffer.from(body), NOW))).toBe("ok");
    expect(code(verifyWebhook(comma, { "x-sig": `v1,${b64}` }, Buffer.from(body), NOW))).toBe("ok");
  });

  it("only tokens that carry the prefix count: the right digest without it is not a signature", async () => {
    const body = '{"id":"e1"}';
    const hex = (await mac("SHA-256", bytes("s"), bytes(body))).toString("hex");
    const p = partner("pfx", { secrets: ["s"], signatureHeader: "X-Sig", prefix: "sha256=", eventIdField: "id" });
    expect(code(verifyWebhook(p, { "x-sig": `sha256=${hex}` }, Buffer.from(body), NOW))).toBe("ok");
    expect(code(verifyWebhook(p, { "x-sig": `sha512=${hex}` }, Buffer.from(body), NOW))).toBe("401 malformed_signature");
  });

  it("a secret that does not decode is skipped; a UTF-8 secret is its bytes", async () => {
    const body = '{"id":"e1"}';
    const key = Buffer.alloc(32, 5);
    const sig = (await mac("SHA-256", key, bytes(body))).toString("hex");
    const hexSecrets: PartnerConfig = { name: "h", scheme: "generic-hmac", secrets: ["zz", key.toString("hex")], secretEncoding: "hex", signatureHeader: "X-Sig" };
    expect(code(verifyWebhook(hexSecrets, { "x-sig": sig }, Buffer.from(body), NOW))).toBe("ok");
    const utf8 = partner("u", { secrets: ["sécret ✓"], signatureHeader: "X-Sig", eventIdField: "id" });
    const utf8Sig = (await mac("SHA-256", bytes("sécret ✓"), bytes(body))).toString("hex");
    expect(code(verifyWebhook(utf8, { "x-sig": utf8Sig }, Buffer.from(body), NOW))).toBe("ok");
  });
});

describe("jsonPath", () => {
  const body = JSON.parse('{"a":{"b":{"c":"deep"},"s":"text","n":null,"list":[{"id":"x"}],"zero":0},"__proto__":{"p":1}}') as unknown;
  it.each([
    ["a.b.c", "deep"], ["a.s", "text"], ["a.zero", 0], ["a.n", null], ["__proto__.p", 1],
    ["a.missing", undefined], ["a.s.length", undefined], ["a.n.x", undefined], ["a.list.0", undefined], ["a.list.0.id", undefined],
    ["a.b.c.d", undefined], ["toString", undefined], ["a.constructor", undefined], ["a.zero.x", undefined],
  ])("%s → %j", (path, value) => {
    expect(jsonPath(body, path)).toEqual(value);
  });

  it("is undefined on anything but an object at the root", () => {
    for (const root of [null, undefined, "text", 1, [{ id: 1 }]]) expect(jsonPath(root, "id")).toBeUndefined();
  });
});
