/** Partner configuration: a mistake is reported with the partner, the field and what to do. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../shared/config.js";
import { loadPartners, parsePartners } from "../../shared/inbound/verify/index.js";

const SW_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError, nothing was thrown");
}
const messageFor = (config: unknown) => errorOf(() => parsePartners(JSON.stringify(config))).message;

describe("parsePartners", () => {
  it("reads one partner per scheme, the name taken from the key", () => {
    const partners = parsePartners(JSON.stringify({
      acme: { scheme: "standard-webhooks", secrets: [SW_SECRET], toleranceSeconds: 120 },
      stripe: { scheme: "stripe", secrets: ["whsec_new", "whsec_old"] },
      github: { scheme: "github", secrets: ["gh"] },
      shop: { scheme: "generic-hmac", secrets: ["s"], signatureHeader: "X-Sig", encoding: "base64", eventIdHeader: "X-Id" },
    }));
    expect([...partners.keys()]).toEqual(["acme", "stripe", "github", "shop"]);
    expect(partners.get("acme")).toEqual({ name: "acme", scheme: "standard-webhooks", secrets: [SW_SECRET], toleranceSeconds: 120 });
    expect(partners.get("stripe")?.secrets).toEqual(["whsec_new", "whsec_old"]);
    expect(partners.get("shop")).toMatchObject({ name: "shop", signatureHeader: "X-Sig", encoding: "base64", eventIdHeader: "X-Id" });
  });

  it("names the partner and the field", () => {
    expect(messageFor({ stripe: { scheme: "stripe", secrets: [] } })).toContain(`partner "stripe" (stripe): secrets: list at least one secret`);
    expect(messageFor({ stripe: { scheme: "stripe", secrets: ["ok", ""] } })).toContain(`partner "stripe" (stripe): secrets[1]: must not be empty`);
    expect(messageFor({ stripe: { scheme: "stripe" } })).toContain(`partner "stripe" (stripe): secrets: is required`);
    expect(messageFor({ gh: { scheme: "github", secret: ["x"], secrets: ["y"] } })).toContain(`partner "gh" (github): unknown field "secret"`);
    expect(messageFor({ x: { scheme: "svix", secrets: ["y"] } })).toContain(`partner "x": scheme: must be one of "standard-webhooks", "stripe", "github", "generic-hmac" (got "svix")`);
    expect(messageFor({ x: { scheme: "stripe", secrets: ["y"], toleranceSeconds: 1.5 } })).toMatch(/partner "x" \(stripe\): toleranceSeconds: .*int/);
  });

  it("lists every problem at once, across partners", () => {
    const message = messageFor({ a: { scheme: "stripe", secrets: [] }, b: { scheme: "github" }, "Bad Name": { scheme: "github", secrets: ["s"] } });
    expect(message).toMatch(/^Invalid PARTNERS:\n/);
    expect(message).toContain(`partner "a"`);
    expect(message).toContain(`partner "b"`);
    expect(message).toContain(`partner "Bad Name": the name must be 1-64 lowercase letters`);
    expect(message).toContain("Fix the partner configuration");
  });

  it("two mistakes in one partner are both reported, whatever the first one is (issue 27 item 17)", () => {
    const scheme = messageFor({ shop: { scheme: "stripee", secrets: [] } });
    expect(scheme).toContain(`partner "shop": scheme: must be one of`);
    expect(scheme).toContain(`partner "shop": secrets: list at least one secret`);
    const missing = messageFor({ shop: { secrets: ["x"], secret: "y" } });
    expect(missing).toContain(`partner "shop": scheme: must be one of`);
    expect(missing).toContain(`partner "shop": unknown field "secret"`);
    const name = messageFor({ Shop: { scheme: "stripe" } });
    expect(name).toContain(`partner "Shop": the name must be 1-64 lowercase letters`);
    expect(name).toContain(`partner "Shop" (stripe): secrets: is required`);
  });

  it("refuses what would be a silent weakness", () => {
    expect(messageFor({ gh: { scheme: "github", secrets: ["s"], toleranceSeconds: 60 } })).toContain(`partner "gh" (github): unknown field "toleranceSeconds"`);
    expect(messageFor({ a: { scheme: "standard-webhooks", secrets: ["whsec_c2hvcnQ="] } })).toContain(`partner "a" (standard-webhooks): secrets[0]: must be whsec_ followed by the base64 of at least 16 bytes`);
    expect(messageFor({ a: { scheme: "standard-webhooks", secrets: ["not base64!"] } })).toContain("secrets[0]: must be whsec_");
  });

  it("generic-hmac: each inconsistent option is named", () => {
    const base = { scheme: "generic-hmac", secrets: ["s"], signatureHeader: "X-Sig", eventIdField: "id" };
    const g = (extra: Record<string, unknown>) => messageFor({ g: { ...base, ...extra } });
    expect(messageFor({ g: { scheme: "generic-hmac", secrets: ["s"], eventIdField: "id" } })).toContain(`partner "g" (generic-hmac): signatureHeader: is required`);
    expect(g({ signatureHeader: "X Sig" })).toContain("signatureHeader: must be an HTTP header name");
    expect(g({ eventIdField: undefined })).toContain("eventIdHeader: set exactly one of eventIdHeader or eventIdField");
    expect(g({ eventIdHeader: "X-Id" })).toContain("eventIdHeader: set exactly one of eventIdHeader or eventIdField");
    expect(g({ algorithm: "md5" })).toMatch(/algorithm: .*"sha256"\|"sha512"\|"sha1"/);
    expect(g({ signedPayload: "{timestamp}.{body}" })).toContain("signedPayload: uses {timestamp} but no timestampHeader is set");
    expect(g({ timestampHeader: "X-Ts", signedPayload: "{body}" })).toContain("signedPayload: must contain {timestamp}: a timestamp that is not signed proves nothing");
    expect(g({ signedPayload: "{timestamp}" , timestampHeader: "X-Ts" })).toContain("signedPayload: must contain {body} exactly once");
    expect(g({ signedPayload: "{ts}.{body}" })).toContain("signedPayload: unknown placeholder {ts}");
    expect(g({ signedPayload: "{id}.{body}" })).toContain("signedPayload: uses {id}, which needs eventIdHeader");
    expect(g({ toleranceSeconds: 60 })).toContain("toleranceSeconds: needs timestampHeader");
    expect(g({ secretEncoding: "hex", secrets: ["zz"] })).toContain("secrets[0]: is not valid hex (secretEncoding)");
    expect(g({ eventIdField: "data..id" })).toContain("eventIdField: must be a dotted path");
  });

  it("a timestamp header defaults the signed payload to {timestamp}.{body}", () => {
    const p = parsePartners(JSON.stringify({ g: { scheme: "generic-hmac", secrets: ["s"], signatureHeader: "X-Sig", timestampHeader: "X-Ts", eventIdField: "id" } })).get("g");
    expect(p?.timestampHeader).toBe("X-Ts");
  });

  it("bad JSON and the wrong shape say what is expected", () => {
    expect(errorOf(() => parsePartners("{stripe:")).message).toMatch(/^PARTNERS is not valid JSON \(.+\)\. Expected an object keyed by partner name/);
    expect(errorOf(() => parsePartners('[{"name":"stripe"}]')).message).toContain("PARTNERS must be a JSON object keyed by partner name");
    expect(messageFor({ s: "stripe" })).toContain(`partner "s": must be an object with scheme and secrets`);
  });
});

describe("loadPartners", () => {
  const dir = mkdtempSync(join(tmpdir(), "partners-"));

  it("reads PARTNERS, or the file named by PARTNERS_FILE; neither means no partners", () => {
    const json = JSON.stringify({ gh: { scheme: "github", secrets: ["s"] } });
    const file = join(dir, "partners.json");
    writeFileSync(file, json);
    expect(loadPartners({ PARTNERS: json }).get("gh")?.scheme).toBe("github");
    expect(loadPartners({ PARTNERS_FILE: file }).get("gh")?.secrets).toEqual(["s"]);
    expect(loadPartners({}).size).toBe(0);
  });

  it("names the file in its errors, and refuses both variables at once", () => {
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ gh: { scheme: "github", secrets: [] } }));
    expect(errorOf(() => loadPartners({ PARTNERS_FILE: file })).message).toContain(`Invalid PARTNERS_FILE (${file}):\n- partner "gh" (github): secrets: list at least one secret`);
    expect(errorOf(() => loadPartners({ PARTNERS_FILE: join(dir, "missing.json") })).message).toMatch(/PARTNERS_FILE: cannot read .*missing\.json \(ENOENT\)/);
    expect(errorOf(() => loadPartners({ PARTNERS: "{}", PARTNERS_FILE: file })).message).toContain("set only one of them");
  });
});

describe("parsePartners: every field's accepted forms and near misses", () => {
  const generic = { scheme: "generic-hmac", secrets: ["s"], signatureHeader: "X-Sig", eventIdField: "id" };
  const ok = (config: Record<string, unknown>, name = "p") => parsePartners(JSON.stringify({ [name]: config })).get(name);

  it.each([["a"], ["stripe"], ["x-y_z"], ["0abc"], ["a".repeat(64)]])("accepts the name %s", (name) => {
    expect(ok({ scheme: "github", secrets: ["s"] }, name)?.name).toBe(name);
  });

  it.each([["a".repeat(65)], ["stripe!"], ["-x"], ["_x"], ["Stripe"], ["a b"], [""]])("refuses the name %j", (name) => {
    expect(messageFor({ [name]: { scheme: "github", secrets: ["s"] } })).toContain(`partner "${name}": the name must be 1-64 lowercase letters`);
  });

  it.each([
    [{ encoding: "hex" }], [{ encoding: "base64" }], [{ encoding: "base64url" }], [{ algorithm: "sha256" }], [{ algorithm: "sha512" }], [{ algorithm: "sha1" }],
    [{ secretEncoding: "utf8" }], [{ secretEncoding: "base64", secrets: ["c2VjcmV0"] }], [{ secretEncoding: "hex", secrets: ["00ff"] }],
    [{ timestampHeader: "X-Ts", timestampUnit: "seconds" }], [{ timestampHeader: "X-Ts", timestampUnit: "milliseconds" }],
    [{ eventIdField: "data.object.id" }], [{ eventIdField: "a.b" }], [{ eventTypeField: "event.type" }], [{ eventTypeHeader: "X-Type" }],
    [{ eventIdField: undefined, eventIdHeader: "X-Id", signedPayload: "{id}.{body}" }], [{ prefix: "v1=" }], [{ timestampHeader: "X-Ts", toleranceSeconds: 86_400 }],
  ])("accepts %o", (extra) => {
    expect(ok({ ...generic, ...extra })).toMatchObject(Object.fromEntries(Object.entries(extra).filter(([, v]) => v !== undefined)));
  });

  it.each([
    [{ eventIdField: ".id" }, "eventIdField: must be a dotted path"], [{ eventIdField: "id." }, "eventIdField: must be a dotted path"],
    [{ eventIdField: "data. id" }, "eventIdField: must be a dotted path"], [{ eventIdField: "data id" }, "eventIdField: must be a dotted path"],
    [{ eventTypeHeader: "X-Type", eventTypeField: "type" }, "eventTypeHeader: set at most one of eventTypeHeader or eventTypeField"],
    [{ signedPayload: "{}.{body}" }, "signedPayload: unknown placeholder {}; use {body}, {timestamp} and {id}"],
    [{ signedPayload: "{body}.{body}" }, "signedPayload: must contain {body} exactly once"],
    [{ toleranceSeconds: "60" }, "toleranceSeconds: "],
    [{ timestampHeader: "X-Ts", timestampUnit: "minutes" }, "timestampUnit: "],
  ])("refuses %o", (extra, message) => {
    const text = messageFor({ g: { ...generic, ...extra } });
    expect(text).toContain(`partner "g" (generic-hmac): ${message}`);
    expect(text).not.toContain("is required");
  });

  it.each([["ignore"], ["quarantine"]])("accepts unhandled: %s on every scheme", (unhandled) => {
    for (const config of [generic, { scheme: "stripe", secrets: ["s"] }, { scheme: "github", secrets: ["s"] }, { scheme: "standard-webhooks", secrets: [SW_SECRET] }]) {
      expect(ok({ ...config, unhandled })?.unhandled).toBe(unhandled);
    }
  });

  it.each([["drop"], [""], ["Ignore"]])("refuses unhandled: %j", (unhandled) => {
    expect(messageFor({ s: { scheme: "stripe", secrets: ["s"], unhandled } })).toContain(`partner "s" (stripe): unhandled: `);
  });

  it("Standard Webhooks secrets: at least 16 key bytes, and at least one secret", () => {
    const sixteen = `whsec_${Buffer.alloc(16, 1).toString("base64")}`;
    expect(ok({ scheme: "standard-webhooks", secrets: [sixteen] })?.secrets).toEqual([sixteen]);
    expect(messageFor({ a: { scheme: "standard-webhooks", secrets: [`whsec_${Buffer.alloc(15, 1).toString("base64")}`] } })).toContain("secrets[0]: must be whsec_ followed by the base64 of at least 16 bytes");
    expect(messageFor({ a: { scheme: "standard-webhooks", secrets: [] } })).toContain(`partner "a" (standard-webhooks): secrets: list at least one secret (two during a rotation)`);
  });

  it("names every unknown field", () => {
    expect(messageFor({ gh: { scheme: "github", secrets: ["s"], foo: 1, bar: 2 } })).toContain(`partner "gh" (github): unknown fields "foo", "bar" (check the spelling; see docs/inbound-partners.md)`);
  });

  it("refuses a partner that is not an object, and a top level that is not one", () => {
    for (const entry of [null, [], 5]) expect(messageFor({ a: entry })).toContain(`partner "a": must be an object with scheme and secrets`);
    for (const json of ["null", "5", '"text"']) expect(errorOf(() => parsePartners(json)).message).toContain("PARTNERS must be a JSON object keyed by partner name");
  });

  it("lists each problem on its own line, and keeps the cause of a JSON or file error", () => {
    expect(messageFor({ a: { scheme: "stripe", secrets: [] }, b: { scheme: "github", secrets: [] } })).toBe(
      "Invalid PARTNERS:\n" +
        '- partner "a" (stripe): secrets: list at least one secret (two during a rotation)\n' +
        '- partner "b" (github): secrets: list at least one secret (two during a rotation)\n' +
        "Fix the partner configuration and start again.",
    );
    expect(errorOf(() => parsePartners("{bad")).cause).toBeInstanceOf(SyntaxError);
    expect(errorOf(() => loadPartners({ PARTNERS_FILE: "/nonexistent/partners.json" })).cause).toMatchObject({ code: "ENOENT" });
  });
});
