/**
 * Must show 1: signatures made by the real senders' own libraries verify, and each way a request
 * can be wrong is refused with its own reason.
 */
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { verifyWebhook, type PartnerConfig, type VerifyResult } from "../../shared/inbound/verify/index.js";

const NOW = 1_764_000_000; // a fixed clock: the tests never depend on the time they run
const stripeSdk = new Stripe("sk_test_not_used_for_network");

function rejected(result: VerifyResult, status: number, code: string, reasonPart: string | RegExp) {
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect({ status: result.status, code: result.code }).toEqual({ status, code });
  expect(result.reason).toMatch(reasonPart);
}

describe("Stripe (signed with the official stripe SDK)", () => {
  const secret = "whsec_test_4eC39HqLyjWDarjtT1zdp7dc";
  const partner: PartnerConfig = { name: "stripe", scheme: "stripe", secrets: [secret] };
  const body = JSON.stringify({ id: "evt_1Qabc", object: "event", type: "payment_intent.succeeded", data: { object: { amount: 4200 } } });
  const header = (opts: { payload?: string; secret?: string; timestamp?: number } = {}) =>
    stripeSdk.webhooks.generateTestHeaderString({ payload: opts.payload ?? body, secret: opts.secret ?? secret, timestamp: opts.timestamp ?? NOW });

  it("accepts the SDK's signature; event id and type come from the body", () => {
    expect(verifyWebhook(partner, { "stripe-signature": header() }, Buffer.from(body), NOW)).toEqual({ ok: true, eventId: "evt_1Qabc", eventType: "payment_intent.succeeded" });
  });

  it("agrees with the SDK's own verifier about the same request", () => {
    const sig = header();
    expect(() => stripeSdk.webhooks.constructEvent(body, sig, secret, 300, undefined, NOW)).not.toThrow();
    expect(verifyWebhook(partner, { "Stripe-Signature": sig }, Buffer.from(body), NOW).ok).toBe(true);
  });

  it("refuses a tampered body", () => {
    rejected(verifyWebhook(partner, { "stripe-signature": header() }, Buffer.from(body.replace("4200", "4201")), NOW), 401, "signature_mismatch", /matches this body/);
  });

  it("refuses a signature made with another secret", () => {
    rejected(verifyWebhook(partner, { "stripe-signature": header({ secret: "whsec_someone_else" }) }, Buffer.from(body), NOW), 401, "signature_mismatch", /current secrets/);
  });

  it("refuses a stale timestamp and a future one, each with its reason", () => {
    rejected(verifyWebhook(partner, { "stripe-signature": header({ timestamp: NOW - 301 }) }, Buffer.from(body), NOW), 401, "timestamp_too_old", /301 s old; the tolerance is 300 s/);
    rejected(verifyWebhook(partner, { "stripe-signature": header({ timestamp: NOW + 301 }) }, Buffer.from(body), NOW), 401, "timestamp_in_future", /in the future/);
    expect(verifyWebhook(partner, { "stripe-signature": header({ timestamp: NOW - 300 }) }, Buffer.from(body), NOW).ok).toBe(true);
    expect(verifyWebhook({ ...partner, toleranceSeconds: 600 }, { "stripe-signature": header({ timestamp: NOW - 301 }) }, Buffer.from(body), NOW).ok).toBe(true);
  });

  it("refuses a missing header", () => {
    rejected(verifyWebhook(partner, { "content-type": "application/json" }, Buffer.from(body), NOW), 401, "missing_signature", /Stripe-signature header is missing/i);
  });

  it("accepts any of several v1 signatures, ignoring v0 and unknown keys", () => {
    const good = header().split(",v1=")[1];
    const value = `t=${NOW},v1=${"0".repeat(64)},v0=${"1".repeat(40)},v9=zz,v1=${good}`;
    expect(verifyWebhook(partner, { "stripe-signature": value }, Buffer.from(body), NOW).ok).toBe(true);
  });

  it("refuses two timestamps (two merged headers) and a header without v1", () => {
    const a = header();
    rejected(verifyWebhook(partner, { "stripe-signature": `${a},${header({ timestamp: NOW - 1 })}` }, Buffer.from(body), NOW), 401, "ambiguous_header", /more than one timestamp/);
    // Node's http joins a repeated header with ", ", even when the other copy is empty.
    rejected(verifyWebhook(partner, { "stripe-signature": `${a}, v1=${"0".repeat(64)}` }, Buffer.from(body), NOW), 401, "ambiguous_header", /sent more than once/);
    rejected(verifyWebhook(partner, { "stripe-signature": `${a}, ` }, Buffer.from(body), NOW), 401, "malformed_signature", /key=value/);
    rejected(verifyWebhook(partner, { "stripe-signature": `t=${NOW},v0=abcd` }, Buffer.from(body), NOW), 401, "malformed_signature", /no v1/);
    rejected(verifyWebhook(partner, { "stripe-signature": `v1=${"a".repeat(64)}` }, Buffer.from(body), NOW), 401, "missing_timestamp", /t=/);
  });

  it("refuses a signature with trailing garbage (strict hex, not Node's lenient decoder)", () => {
    rejected(verifyWebhook(partner, { "stripe-signature": `${header()}zz` }, Buffer.from(body), NOW), 401, "malformed_signature", /no v1/);
  });

  it("after a good signature: no id in the body is a 400, never an invented id", () => {
    const noId = JSON.stringify({ object: "event", type: "x" });
    rejected(verifyWebhook(partner, { "stripe-signature": header({ payload: noId }) }, Buffer.from(noId), NOW), 400, "missing_event_id", /JSON field id \(it is missing\)/);
  });
  it("an item without a key, or a timestamp that is not whole seconds, is refused with its reason", () => {
    const sig = header();
    const reason = (value: string) => { const r = verifyWebhook(partner, { "stripe-signature": value }, Buffer.from(body), NOW); return r.ok ? "ok" : `${r.code}: ${r.reason}`; };
    expect(reason(`${sig},=abc`)).toBe("malformed_signature: The Stripe-Signature header must be comma-separated key=value items (t=…,v1=…).");
    expect(reason(`${sig},novalue`)).toBe("malformed_signature: The Stripe-Signature header must be comma-separated key=value items (t=…,v1=…).");
    for (const t of ["+1764000000", "1e9", "0x10", "1764000000.5", ""]) {
      expect(reason(sig.replace(/^t=\d+/, `t=${t}`))).toBe("invalid_timestamp: The Stripe-Signature timestamp (t=) must be whole seconds since the epoch.");
    }
    expect(reason("v0=abcd")).toBe("missing_timestamp: The Stripe-Signature header holds no timestamp (t=<seconds>).");
    expect(reason(`t=${NOW},v1=zz`)).toBe("malformed_signature: The Stripe-Signature header holds no v1=<hex> signature.");
  });

  it("says why a missing header is refused", () => {
    const r = verifyWebhook(partner, {}, Buffer.from(body), NOW);
    expect(!r.ok && r.reason).toBe("The stripe-signature header is missing: Stripe signs every event; check the endpoint's signing secret.");
  });

  it("a secret with non-ASCII characters is its UTF-8 bytes", () => {
    const odd = "whsec_sécret✓";
    const signed = stripeSdk.webhooks.generateTestHeaderString({ payload: body, secret: odd, timestamp: NOW });
    expect(verifyWebhook({ ...partner, secrets: [odd] }, { "stripe-signature": signed }, Buffer.from(body), NOW).ok).toBe(true);
  });
});

describe("GitHub (signed with @octokit/webhooks-methods)", () => {
  const secret = "It's a Secret to Everybody";
  const partner: PartnerConfig = { name: "github", scheme: "github", secrets: [secret] };
  const body = JSON.stringify({ action: "opened", issue: { number: 1347, title: "Spëcial chârs ✓" } });
  const delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
  const headersFor = async (payload = body, key = secret) => ({
    "x-hub-signature-256": await githubSign(key, payload),
    "x-github-delivery": delivery,
    "x-github-event": "issues",
  });

  it("accepts octokit's signature; id from X-GitHub-Delivery, type from X-GitHub-Event plus the body's action", async () => {
    expect(verifyWebhook(partner, await headersFor(), Buffer.from(body))).toEqual({ ok: true, eventId: delivery, eventType: "issues.opened" });
    // push has no action: the type is the event alone; an action that is not a word is left out.
    const push = JSON.stringify({ ref: "refs/heads/main", commits: [] });
    expect(verifyWebhook(partner, { ...(await headersFor(push)), "x-github-event": "push" }, Buffer.from(push))).toMatchObject({ ok: true, eventType: "push" });
    const odd = JSON.stringify({ action: "not a word" });
    expect(verifyWebhook(partner, await headersFor(odd), Buffer.from(odd))).toMatchObject({ ok: true, eventType: "issues" });
    // Nor is one that is not a string, even when its text would be a word.
    for (const action of [5, ["opened"], true]) {
      const notText = JSON.stringify({ action });
      expect(verifyWebhook(partner, await headersFor(notText), Buffer.from(notText))).toMatchObject({ ok: true, eventType: "issues" });
    }
  });

  it("refuses a tampered body, a wrong secret and a missing signature", async () => {
    rejected(verifyWebhook(partner, await headersFor(), Buffer.from(body.replace("1347", "1348"))), 401, "signature_mismatch", /X-Hub-Signature-256/);
    rejected(verifyWebhook(partner, await headersFor(body, "wrong"), Buffer.from(body)), 401, "signature_mismatch", /current secrets/);
    const { "x-hub-signature-256": _, ...unsigned } = await headersFor();
    rejected(verifyWebhook(partner, unsigned, Buffer.from(body)), 401, "missing_signature", /x-hub-signature-256 header is missing/);
  });

  it("refuses the SHA-1 form and a signature without its sha256= prefix", async () => {
    const h = await headersFor();
    rejected(verifyWebhook(partner, { ...h, "x-hub-signature-256": h["x-hub-signature-256"].replace("sha256=", "sha1=") }, Buffer.from(body)), 401, "malformed_signature", /sha256=<hex>/);
    rejected(verifyWebhook(partner, { ...h, "x-hub-signature-256": h["x-hub-signature-256"].slice(7) }, Buffer.from(body)), 401, "malformed_signature", /sha256=<hex>/);
  });

  it("a good signature without X-GitHub-Delivery is a 400 naming the header", async () => {
    const { "x-github-delivery": _, ...noDelivery } = await headersFor();
    rejected(verifyWebhook(partner, noDelivery, Buffer.from(body)), 400, "missing_event_id", /x-github-delivery/);
    rejected(verifyWebhook(partner, { ...noDelivery, "x-github-delivery": `${delivery}, ${delivery}` }, Buffer.from(body)), 400, "ambiguous_header", /X-GitHub-Delivery header was sent more than once/);
  });

  it("rotation: the old and the new secret are both accepted, a third is not", async () => {
    const rotating: PartnerConfig = { ...partner, secrets: ["new-secret", secret] };
    expect(verifyWebhook(rotating, await headersFor(body, secret), Buffer.from(body)).ok).toBe(true);
    expect(verifyWebhook(rotating, await headersFor(body, "new-secret"), Buffer.from(body)).ok).toBe(true);
    rejected(verifyWebhook(rotating, await headersFor(body, "retired-secret"), Buffer.from(body)), 401, "signature_mismatch", /./);
  });
  it("a doubled X-GitHub-Event is refused in every form it can arrive in", async () => {
    const h = await headersFor();
    for (const doubled of [{ "x-github-event": ["issues", "push"] }, { "X-GitHub-Event": "push" }, { "x-github-event": "issues, push" }, { "x-github-event": ["issues", "issues"] }]) {
      rejected(verifyWebhook(partner, { ...h, ...doubled }, Buffer.from(body)), 400, "ambiguous_header", /^The X-GitHub-Event header was sent more than once; send it exactly once\.$/);
    }
  });

  it("an event without X-GitHub-Event has no type, and is still accepted", async () => {
    const { "x-github-event": _, ...untyped } = await headersFor();
    expect(verifyWebhook(partner, untyped, Buffer.from(body))).toEqual({ ok: true, eventId: delivery, eventType: null });
  });

  it("a secret with non-ASCII characters is its UTF-8 bytes", async () => {
    const p: PartnerConfig = { ...partner, secrets: ["sécret ✓"] };
    expect(verifyWebhook(p, await headersFor(body, "sécret ✓"), Buffer.from(body)).ok).toBe(true);
  });

  it("says what each refusal means", async () => {
    const h = await headersFor();
    const reason = (headers: Record<string, string>) => { const r = verifyWebhook(partner, headers, Buffer.from(body)); return r.ok ? "ok" : r.reason; };
    const { "x-hub-signature-256": _s, ...unsigned } = h;
    const { "x-github-delivery": _d, ...noDelivery } = h;
    expect(reason(unsigned)).toBe("The x-hub-signature-256 header is missing: set a secret on the GitHub webhook so GitHub signs with SHA-256.");
    expect(reason({ ...h, "x-hub-signature-256": "sha256=zz" })).toBe("The X-Hub-Signature-256 header must be `sha256=<hex>`.");
    expect(reason({ ...h, "x-hub-signature-256": `sha256=${"0".repeat(64)}` })).toBe("X-Hub-Signature-256 does not match this body with any of the partner's current secrets.");
    expect(reason(noDelivery)).toBe("The x-github-delivery header is missing: GitHub sends the delivery id there, and it is the event id.");
    expect(reason({ ...h, "x-github-delivery": "d".repeat(256) })).toMatch(/^The event id in header X-GitHub-Delivery must be at most 255 characters/);
  });
});

describe("Standard Webhooks (signed with the standardwebhooks library)", () => {
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const partner: PartnerConfig = { name: "acme", scheme: "standard-webhooks", secrets: [secret] };
  const body = JSON.stringify({ type: "order.paid", data: { order: "o_1" } });
  const headersFor = (opts: { key?: string; id?: string; at?: number; payload?: string } = {}) => {
    const id = opts.id ?? "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
    const at = opts.at ?? NOW;
    return {
      "webhook-id": id,
      "webhook-timestamp": String(at),
      "webhook-signature": new Webhook(opts.key ?? secret).sign(id, new Date(at * 1000), opts.payload ?? body),
    };
  };

  it("accepts the library's signature; id from webhook-id, type from the body", () => {
    expect(verifyWebhook(partner, headersFor(), Buffer.from(body), NOW)).toEqual({ ok: true, eventId: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", eventType: "order.paid" });
  });

  it("the library's own verifier accepts the same request (the test fixture is sound)", () => {
    const h = headersFor({ at: Math.floor(Date.now() / 1000) });
    expect(() => new Webhook(secret).verify(body, h)).not.toThrow();
    expect(verifyWebhook(partner, h, Buffer.from(body)).ok).toBe(true);
  });

  it("refuses a tampered body, a wrong secret, a swapped webhook-id", () => {
    rejected(verifyWebhook(partner, headersFor(), Buffer.from(body + " "), NOW), 401, "signature_mismatch", /webhook-signature/);
    rejected(verifyWebhook(partner, headersFor({ key: "whsec_" + Buffer.alloc(24, 7).toString("base64") }), Buffer.from(body), NOW), 401, "signature_mismatch", /current secrets/);
    rejected(verifyWebhook(partner, { ...headersFor(), "webhook-id": "msg_other" }, Buffer.from(body), NOW), 401, "signature_mismatch", /./);
  });

  it("refuses stale and future timestamps with distinct reasons", () => {
    rejected(verifyWebhook(partner, headersFor({ at: NOW - 3600 }), Buffer.from(body), NOW), 401, "timestamp_too_old", /3600 s old/);
    rejected(verifyWebhook(partner, headersFor({ at: NOW + 3600 }), Buffer.from(body), NOW), 401, "timestamp_in_future", /3600 s in the future/);
    rejected(verifyWebhook(partner, { ...headersFor(), "webhook-timestamp": "2025-11-24T00:00:00Z" }, Buffer.from(body), NOW), 401, "invalid_timestamp", /whole seconds/);
  });

  it("refuses each missing header with its name", () => {
    for (const [name, code] of [["webhook-id", "missing_header"], ["webhook-timestamp", "missing_timestamp"], ["webhook-signature", "missing_signature"]] as const) {
      const h: Record<string, string> = headersFor();
      delete h[name];
      rejected(verifyWebhook(partner, h, Buffer.from(body), NOW), 401, code, new RegExp(`${name} header is missing`));
    }
  });

  it("rotation: a signature list with one good entry passes; secrets listed old and new both verify", () => {
    const other = "whsec_" + Buffer.alloc(32, 9).toString("base64");
    const good = headersFor();
    const list = `v1a,ZmFrZQ== v1,${Buffer.alloc(32).toString("base64")} ${good["webhook-signature"]}`;
    expect(verifyWebhook(partner, { ...good, "webhook-signature": list }, Buffer.from(body), NOW).ok).toBe(true);
    const rotating: PartnerConfig = { ...partner, secrets: [other, secret] };
    expect(verifyWebhook(rotating, headersFor(), Buffer.from(body), NOW).ok).toBe(true);
    expect(verifyWebhook(rotating, headersFor({ key: other }), Buffer.from(body), NOW).ok).toBe(true);
  });

  it("a list with no v1 or v1a entry is malformed; v1a alone, for a partner without a whpk_ key, says to add one", () => {
    rejected(verifyWebhook(partner, { ...headersFor(), "webhook-signature": "v2,abc v1b,ZmFrZQ==" }, Buffer.from(body), NOW), 401, "malformed_signature", /v1,<base64>/);
    // v1a (ed25519) is checked since issue 17 (test/inbound/verify.v1a.test.ts); a whsec_-only partner cannot.
    rejected(verifyWebhook(partner, { ...headersFor(), "webhook-signature": "v1a,ZmFrZQ== v2,abc" }, Buffer.from(body), NOW), 401, "signature_mismatch", /no whpk_ public key/);
  });
  it("a secret without its whsec_ prefix works too, and a key with + and / is read as base64", () => {
    const key = Buffer.alloc(32, 0xfb); // base64 "+/v7…": not base64url
    const withPrefix = `whsec_${key.toString("base64")}`;
    expect(key.toString("base64")).toMatch(/[+/]/);
    for (const secrets of [[withPrefix], [key.toString("base64")]]) {
      expect(verifyWebhook({ ...partner, secrets }, headersFor({ key: withPrefix }), Buffer.from(body), NOW).ok).toBe(true);
    }
  });

  it("a signature written with + and / is read as base64", () => {
    let payload = body;
    let h = headersFor({ payload });
    for (let n = 0; !/[+/]/.test(h["webhook-signature"]); n++) h = headersFor({ payload: (payload = JSON.stringify({ type: "order.paid", n })) });
    expect(verifyWebhook(partner, h, Buffer.from(payload), NOW).ok).toBe(true);
  });

  it("only v1 entries count: the right signature labelled v2 is not accepted", () => {
    const good = headersFor();
    const v2 = good["webhook-signature"].replace(/^v1,/, "v2,");
    rejected(verifyWebhook(partner, { ...good, "webhook-signature": v2 }, Buffer.from(body), NOW), 401, "malformed_signature", /./);
  });

  it("an entry that is not base64 is skipped, not fatal", () => {
    const good = headersFor();
    expect(verifyWebhook(partner, { ...good, "webhook-signature": `v1,not-base64! ${good["webhook-signature"]}` }, Buffer.from(body), NOW).ok).toBe(true);
  });

  it("a partner secret that is not base64 is skipped, the others still verify", () => {
    const broken: PartnerConfig = { ...partner, secrets: ["whsec_not base64!", secret] };
    expect(verifyWebhook(broken, headersFor(), Buffer.from(body), NOW).ok).toBe(true);
    rejected(verifyWebhook({ ...partner, secrets: ["whsec_not base64!"] }, headersFor(), Buffer.from(body), NOW), 401, "signature_mismatch", /./);
  });

  it("says what each refusal means", () => {
    const h: Record<string, string> = headersFor();
    const without = (name: string) => Object.fromEntries(Object.entries(h).filter(([k]) => k !== name));
    const reason = (headers: Record<string, string>) => { const r = verifyWebhook(partner, headers, Buffer.from(body), NOW); return r.ok ? "ok" : r.reason; };
    expect(reason(without("webhook-id"))).toBe("The webhook-id header is missing: Standard Webhooks signs the message id with the body.");
    expect(reason(without("webhook-timestamp"))).toBe("The webhook-timestamp header is missing: Standard Webhooks signs the time of sending (seconds since the epoch).");
    expect(reason(without("webhook-signature"))).toBe("The webhook-signature header is missing: sign the request with one of the partner's secrets.");
    expect(reason({ ...h, "webhook-timestamp": "+1764000000" })).toBe("The webhook-timestamp header must be whole seconds since the epoch.");
    expect(reason({ ...h, "webhook-signature": "v2,ZmFrZQ==" })).toBe("The webhook-signature header holds no `v1,<base64>` (HMAC) or `v1a,<base64>` (ed25519) signature.");
    expect(reason({ ...h, "webhook-signature": "v1a,ZmFrZQ==" })).toBe("The webhook-signature header holds only v1a (ed25519) signatures, and this partner has no whpk_ public key among its secrets: add the sender's whpk_ key.");
    expect(reason({ ...h, "webhook-signature": "v1,AAAA, v1,AAAA" })).toBe("The webhook-signature header was sent more than once; send one header with space-separated signatures.");
    expect(reason({ ...h, "webhook-id": "msg_other" })).toBe("No signature in webhook-signature matches this body with any of the partner's current secrets.");
  });

  it("the event id comes from webhook-id; without it identify is a 400 naming the header", async () => {
    const { standardWebhooks } = await import("../../shared/inbound/verify/standardWebhooks.js");
    expect(standardWebhooks.identify(partner, { "webhook-id": "msg_1" }, { type: "a" })).toEqual({ id: "msg_1", idSource: "header webhook-id", type: "a" });
    expect(standardWebhooks.identify(partner, {}, {})).toEqual({ ok: false, status: 400, code: "missing_event_id", reason: "The webhook-id header is missing: it is the event id." });
    rejected(verifyWebhook(partner, headersFor({ id: "m".repeat(256) }), Buffer.from(body), NOW), 400, "invalid_event_id", /^The event id in header webhook-id must be/);
  });
});

describe("headers and body, whatever the scheme", () => {
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const partner: PartnerConfig = { name: "acme", scheme: "standard-webhooks", secrets: [secret] };
  // The library turns a Buffer into a string first (lossy for invalid UTF-8), so byte-exact
  // fixtures are signed here, directly from the Standard Webhooks definition.
  const signed = (payload: Buffer | string, id = "msg_1") => ({
    "webhook-id": id,
    "webhook-timestamp": String(NOW),
    "webhook-signature": `v1,${createHmac("sha256", Buffer.from(secret.slice(6), "base64")).update(`${id}.${NOW}.`).update(payload).digest("base64")}`,
  });

  it("header names are matched in any case", () => {
    const body = '{"type":"a"}';
    const h = signed(body);
    const upper = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toUpperCase(), v]));
    expect(verifyWebhook(partner, upper, Buffer.from(body), NOW).ok).toBe(true);
  });

  it("a header sent twice (an array, or two spellings) is refused as ambiguous, even when one copy is right", () => {
    const body = '{"type":"a"}';
    const h = signed(body);
    rejected(verifyWebhook(partner, { ...h, "webhook-signature": [h["webhook-signature"], "v1,AAAA"] }, Buffer.from(body), NOW), 401, "ambiguous_header", /webhook-signature header was sent more than once/);
    rejected(verifyWebhook(partner, { ...h, "Webhook-Id": "msg_2" }, Buffer.from(body), NOW), 401, "ambiguous_header", /webhook-id/);
    expect(verifyWebhook(partner, { ...h, "webhook-signature": [h["webhook-signature"]] }, Buffer.from(body), NOW).ok).toBe(true);
    // Node's http joins a repeated header with ", ": that is refused too, not read as a list.
    rejected(verifyWebhook(partner, { ...h, "webhook-signature": `v1,AAAA, ${h["webhook-signature"]}` }, Buffer.from(body), NOW), 401, "ambiguous_header", /more than once/);
  });

  it("signature before body: an unsigned request with a broken body is a 401, not a 400", () => {
    rejected(verifyWebhook(partner, {}, Buffer.from("{not json"), NOW), 401, "missing_header", /webhook-id/);
  });

  it("a signed body that is not a UTF-8 JSON object is a 400 with the reason", () => {
    const cases: Array<[Buffer, RegExp]> = [
      [Buffer.from("{not json"), /not valid JSON/],
      [Buffer.from(""), /empty/],
      [Buffer.from("[1,2]"), /not an object/],
      [Buffer.from('"text"'), /not an object/],
      [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]), /byte order mark/],
      [Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), /not valid UTF-8/],
      [Buffer.from('{"a":1}', "utf16le"), /not valid JSON/],
    ];
    for (const [body, reason] of cases) rejected(verifyWebhook(partner, signed(body), body, NOW), 400, "invalid_json", reason);
  });

  it("verifies the exact bytes: the same JSON re-serialised does not pass", () => {
    const original = Buffer.from('{ "type": "a",  "n": 1.0 }');
    const h = signed(original);
    expect(verifyWebhook(partner, h, original, NOW).ok).toBe(true);
    rejected(verifyWebhook(partner, h, Buffer.from(JSON.stringify(JSON.parse(original.toString()))), NOW), 401, "signature_mismatch", /./);
  });

  it("an over-long or control-character event id is refused; a non-string type reads as null", () => {
    const body = '{"type":42}';
    rejected(verifyWebhook(partner, signed(body, "m".repeat(256)), Buffer.from(body), NOW), 400, "invalid_event_id", /at most 255/);
    rejected(verifyWebhook(partner, signed(body, "a\u0001b"), Buffer.from(body), NOW), 400, "invalid_event_id", /control/);
    expect(verifyWebhook(partner, signed(body, "m".repeat(255)), Buffer.from(body), NOW)).toEqual({ ok: true, eventId: "m".repeat(255), eventType: null });
  });
});
