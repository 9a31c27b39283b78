/**
 * What the inbound fuzz test sends: the partners it configures, how each partner's sender signs
 * arbitrary bytes (node:crypto, straight from each scheme's definition: the senders' libraries take
 * strings and would re-encode invalid UTF-8), and the fast-check generators of malformed requests.
 */
import { createHmac } from "node:crypto";
import fc from "fast-check";

export const SW_SECRET = `whsec_${Buffer.from("fuzz-standard-webhooks-secret-32b").toString("base64")}`;
export const STRIPE_SECRET = "whsec_fuzz_stripe";
export const GH_SECRET = "fuzz-github";
export const GEN_SECRET = "fuzz-generic";
export const PARTNERS = {
  sw: { scheme: "standard-webhooks", secrets: [SW_SECRET] },
  stripe: { scheme: "stripe", secrets: [STRIPE_SECRET] },
  gh: { scheme: "github", secrets: [GH_SECRET] },
  gen: { scheme: "generic-hmac", secrets: [GEN_SECRET], signatureHeader: "X-Sig", timestampHeader: "X-Ts", eventIdField: "meta.id" },
} as const;
export type PartnerName = keyof typeof PARTNERS;
export const PARTNER_NAMES = Object.keys(PARTNERS) as PartnerName[];
export const MAX_BODY = 8192;
export const SEED = 20_260_301;

export const nowSeconds = () => Math.floor(Date.now() / 1000);
const hmac = (key: Buffer | string, ...parts: (string | Buffer)[]) => {
  const mac = createHmac("sha256", key);
  for (const p of parts) mac.update(p);
  return mac.digest();
};

/** The headers each partner's sender would add for these exact bytes. */
export function signedHeaders(partner: PartnerName, body: Buffer, at = nowSeconds(), id = `evt_${at}_${body.length}`): Record<string, string> {
  switch (partner) {
    case "sw":
      return { "webhook-id": id, "webhook-timestamp": String(at), "webhook-signature": `v1,${hmac(Buffer.from(SW_SECRET.slice(6), "base64"), `${id}.${at}.`, body).toString("base64")}` };
    case "stripe":
      return { "stripe-signature": `t=${at},v1=${hmac(STRIPE_SECRET, `${at}.`, body).toString("hex")}` };
    case "gh":
      return { "x-hub-signature-256": `sha256=${hmac(GH_SECRET, body).toString("hex")}`, "x-github-delivery": id, "x-github-event": "push" };
    case "gen":
      return { "x-sig": hmac(GEN_SECRET, `${at}.`, body).toString("hex"), "x-ts": String(at) };
  }
}

/** True when these bytes are a body every partner would accept (UTF-8 JSON object, no BOM). */
export function isJsonObject(body: Buffer): boolean {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return false;
  try {
    const v: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(body));
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

// ---- generators -----------------------------------------------------------------------------

export const jsonObject = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 6 });
/** A body with a usable event id for every scheme (Stripe's `id`, generic's `meta.id`). */
export const goodObject = jsonObject.map((o) => ({ ...o, id: "evt_fuzz", meta: { id: "evt_fuzz" } }));

/** Bytes that are not a UTF-8 JSON object, in many ways. */
export const malformedBody: fc.Arbitrary<Buffer> = fc
  .oneof(
    fc.string({ maxLength: 300, unit: "binary" }).map((s) => Buffer.from(s)),
    fc.uint8Array({ maxLength: 600 }).map((a) => Buffer.from(a)),
    fc.oneof(fc.array(fc.jsonValue({ maxDepth: 2 })), fc.integer(), fc.string(), fc.constant(null), fc.boolean()).map((v) => Buffer.from(JSON.stringify(v))),
    goodObject.map((o) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(o))])),
    goodObject.map((o) => Buffer.from(JSON.stringify(o), "utf16le")),
    goodObject.map((o) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(JSON.stringify(o), "utf16le")])),
    fc.tuple(goodObject, fc.constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc0, 0xaf])).map(([o, bad]) => {
      const text = Buffer.from(JSON.stringify({ ...o, note: "@" }));
      const at = text.indexOf("@");
      return Buffer.concat([text.subarray(0, at), Buffer.from(bad), text.subarray(at + 1)]);
    }),
    fc.tuple(goodObject, fc.integer({ min: 1, max: 20 })).map(([o, cut]) => {
      const text = JSON.stringify(o);
      return Buffer.from(text.slice(0, Math.max(0, text.length - cut)));
    }),
    fc.constant(Buffer.alloc(0)),
    fc.constant(Buffer.from("{\"id\":\"evt_1\",}")),
    fc.constant(Buffer.from("{\"id\": NaN}")),
  )
  .filter((b) => !isJsonObject(b));

export const headerValue = fc.oneof(
  fc.string({ maxLength: 80, unit: fc.integer({ min: 0x20, max: 0xff }).filter((c) => c !== 0x7f).map((c) => String.fromCharCode(c)) }),
  fc.uint8Array({ minLength: 1, maxLength: 40 }).map((a) => `v1,${Buffer.from(a).toString("base64")}`),
  fc.tuple(fc.integer({ min: 0, max: 2 ** 40 }), fc.uint8Array({ minLength: 32, maxLength: 32 })).map(([t, s]) => `t=${t},v1=${Buffer.from(s).toString("hex")}`),
  fc.uint8Array({ minLength: 32, maxLength: 32 }).map((s) => `sha256=${Buffer.from(s).toString("hex")}`),
  fc.constant(String(nowSeconds())),
  fc.constant(""),
);
const SIGNING_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature", "Webhook-Signature", "stripe-signature", "x-hub-signature-256", "x-github-delivery", "x-github-event", "x-sig", "x-ts"];
const ODD_HEADERS = ["content-type", "content-encoding", "x-forwarded-for", "expect"];
export const randomHeaders = fc.dictionary(
  fc.constantFrom(...SIGNING_HEADERS, ...ODD_HEADERS),
  fc.oneof(headerValue, fc.array(headerValue, { minLength: 2, maxLength: 3 })),
  { maxKeys: 6 },
).map((h) => {
  // "expect: 100-continue" changes the exchange, and Node answers other expectations 417: fine,
  // but keep it meaningful by sending only those two shapes.
  if ("expect" in h) h.expect = "100-continue";
  return h;
});
export const contentType = fc.constantFrom("application/json", "application/json; charset=utf-16", "text/plain; charset=latin1", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=\"\"");
export const partnerPath = fc.oneof(
  fc.constantFrom(...PARTNER_NAMES).map((p) => `/webhooks/${p}`),
  fc.constantFrom("/webhooks/unknown", "/webhooks/SW", "/webhooks/sw/", "/webhooks/%73w", "/webhooks/stripe%00", "/webhooks/gh?x=1"),
);
export const garbagePath = fc.oneof(
  fc.string({ maxLength: 120, unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)) }).map((s) => `/${s}`),
  fc.string({ maxLength: 60 }).map((s) => `/webhooks/${encodeURIComponent(s)}`),
  fc.constantFrom("/webhooks/%zz", "/webhooks/%", "/webhooks//", "/webhooks/../healthz", "//webhooks/sw", "/webhooks/sw/extra", "/inbox/x/replay", `/webhooks/${"a".repeat(5000)}`, "/%E0%A4%A", "/admin/..%2f..%2fpackage.json"),
);

export interface Sent {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body?: Buffer;
  /** Send the body in these pieces with Transfer-Encoding: chunked. */
  chunks?: number[];
}

export function splitAt(body: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const p of points) {
    pieces.push(body.subarray(from, p));
    from = p;
  }
  pieces.push(body.subarray(from));
  return pieces.filter((p) => p.length > 0);
}
