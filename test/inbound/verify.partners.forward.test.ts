/**
 * Partner configuration, the forward field (issue 16): where each verified event is handed on and
 * the Standard Webhooks secrets it is signed with, or `true` (the API's destinations only, issue 30). Every accepted form, each near miss, and the
 * message naming the nested field. Also: a standard-webhooks partner's whpk_ public keys (v1a).
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../shared/config.js";
import { generateSigningKey, publicKeyText } from "../../shared/crypto/ed25519.js";
import { parsePartners } from "../../shared/inbound/verify/index.js";

const key = (bytes: number) => `whsec_${Buffer.alloc(bytes, 7).toString("base64")}`;
const SIXTEEN = key(16);
const SCHEMES: Record<string, Record<string, unknown>> = {
  "standard-webhooks": { scheme: "standard-webhooks", secrets: [key(24)] },
  stripe: { scheme: "stripe", secrets: ["whsec_stripe"] },
  github: { scheme: "github", secrets: ["gh"] },
  "generic-hmac": { scheme: "generic-hmac", secrets: ["s"], signatureHeader: "X-Sig", eventIdHeader: "X-Id" },
};

function messageFor(config: Record<string, unknown>): string {
  try {
    parsePartners(JSON.stringify({ p: config }));
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError, nothing was thrown");
}

describe("parsePartners: forward", () => {
  it.each(Object.keys(SCHEMES))("accepts forward on %s, kept as given", (scheme) => {
    const forward = { url: "https://orders.internal.example/webhooks", secrets: [SIXTEEN, key(32)] };
    expect(parsePartners(JSON.stringify({ p: { ...SCHEMES[scheme], forward } })).get("p")?.forward).toEqual(forward);
  });

  it("may be true: forward only to the destinations added through the API (issue 30)", () => {
    expect(parsePartners(JSON.stringify({ p: { ...SCHEMES.github, forward: true } })).get("p")?.forward).toBe(true);
    // Only true: false, a string or an empty object are mistakes, named as the object's.
    expect(messageFor({ ...SCHEMES.github, forward: false })).toContain(`partner "p" (github): forward: `);
    expect(messageFor({ ...SCHEMES.github, forward: {} })).toContain(`partner "p" (github): forward.url: must be an http(s) URL of your service`);
  });

  it("is optional", () => {
    expect(parsePartners(JSON.stringify({ p: SCHEMES.stripe })).get("p")?.forward).toBeUndefined();
  });

  it.each([["http://127.0.0.1:8080/in"], ["https://a.example"], ["HTTPS://A.EXAMPLE/x?y=1"]])("accepts the URL %s", (url) => {
    expect(parsePartners(JSON.stringify({ p: { ...SCHEMES.github, forward: { url, secrets: [SIXTEEN] } } })).get("p")?.forward).toEqual({ url, secrets: [SIXTEEN] });
  });

  it.each([["ftp://a.example/"], ["xhttps://a.example/"], ["httpsx://a.example/"], ["ws://a.example/"], ["javascript:alert(1)"], ["a.example/hook"], [""]])(
    "refuses the URL %j, saying what it must be",
    (url) => {
      expect(messageFor({ ...SCHEMES.github, forward: { url, secrets: [SIXTEEN] } })).toContain(`partner "p" (github): forward.url: must be an http(s) URL of your service`);
    },
  );

  it.each([
    ["15 key bytes", key(15)],
    ["a Stripe-style secret", "whsec_stripe"],
    ["a public key (forwarding signs; it needs the secret)", "whpk_" + Buffer.alloc(32, 7).toString("base64")],
    ["empty", ""],
  ])("refuses a forward secret that is %s", (_what, secret) => {
    expect(messageFor({ ...SCHEMES.stripe, forward: { url: "https://a.example/", secrets: [SIXTEEN, secret] } })).toContain(
      `partner "p" (stripe): forward.secrets[1]: must be whsec_ followed by the base64 of at least 16 bytes (e.g. from \`webhooks subscriptions create\`)`,
    );
  });

  it("names a missing or empty part of forward, and an unknown field in it", () => {
    expect(messageFor({ ...SCHEMES.stripe, forward: { url: "https://a.example/", secrets: [] } })).toContain(`partner "p" (stripe): forward.secrets: list at least one signing secret`);
    expect(messageFor({ ...SCHEMES.stripe, forward: { url: "https://a.example/" } })).toContain(`partner "p" (stripe): forward.secrets: is required`);
    // The URL's own message covers its absence too.
    expect(messageFor({ ...SCHEMES.stripe, forward: { secrets: [SIXTEEN] } })).toContain(`partner "p" (stripe): forward.url: must be an http(s) URL of your service`);
    expect(messageFor({ ...SCHEMES.stripe, forward: { url: "https://a.example/", secrets: [SIXTEEN], secret: SIXTEEN } })).toContain(`partner "p" (stripe): unknown field "secret"`);
  });
});

describe("parsePartners: standard-webhooks public keys (v1a)", () => {
  it("accepts a sender's whpk_ public key among the secrets, alone or beside a whsec_ one", () => {
    const publicKey = publicKeyText(generateSigningKey())!;
    expect(parsePartners(JSON.stringify({ p: { scheme: "standard-webhooks", secrets: [publicKey] } })).get("p")?.secrets).toEqual([publicKey]);
    expect(parsePartners(JSON.stringify({ p: { scheme: "standard-webhooks", secrets: [SIXTEEN, publicKey] } })).get("p")?.secrets).toEqual([SIXTEEN, publicKey]);
  });

  it("refuses a signing key or a malformed public key in its place", () => {
    for (const secret of [generateSigningKey(), "whpk_" + Buffer.alloc(31, 7).toString("base64"), "whpk_"]) {
      expect(messageFor({ scheme: "standard-webhooks", secrets: [secret] })).toContain(`secrets[0]: must be whsec_ followed by the base64 of at least 16 bytes (v1), or the sender's whpk_ ed25519 public key (v1a)`);
    }
  });
});
