/**
 * The strict readers every scheme relies on: signatures as each encoding writes them, signed
 * timestamps, the tolerance window, the constant-time match, and reading one header. Each table
 * lists every form that must pass and every near miss that must not.
 */
import { describe, expect, it } from "vitest";
import { eventIdFrom, eventTypeFrom, parseJsonObject } from "../../shared/inbound/verify/body.js";
import { indexHeaders, isRejection, readHeader, requireHeader } from "../../shared/inbound/verify/headers.js";
import { decodeStrict, hmac, matchesAny } from "../../shared/inbound/verify/hmac.js";
import { checkFreshness, parseEpoch } from "../../shared/inbound/verify/timestamp.js";
import type { SignatureEncoding } from "../../shared/inbound/verify/types.js";

describe("decodeStrict", () => {
  it.each<[SignatureEncoding, string, string]>([
    ["hex", "00ff", "00ff"],
    ["hex", "0123456789abcdef", "0123456789abcdef"],
    ["hex", "ABCDEF", "abcdef"],
    ["hex", "aBcD", "abcd"],
    ["base64", "AAAA", "000000"],
    ["base64", "AA==", "00"],
    ["base64", "AAE=", "0001"],
    ["base64", "+/+/", "fbffbf"],
    ["base64", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", Buffer.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", "base64").toString("hex")],
    ["base64url", "-_-_", "fbffbf"],
    ["base64url", "AAE", "0001"],
    ["base64url", "AAE=", "0001"],
    ["base64url", "AA==", "00"],
    ["base64url", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", Buffer.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", "base64url").toString("hex")],
  ])("%s %s decodes to %s", (encoding, text, hex) => {
    expect(decodeStrict(text, encoding)?.toString("hex")).toBe(hex);
  });

  it.each<[SignatureEncoding, string, string]>([
    ["hex", "", "empty"],
    ["hex", "abc", "odd length"],
    ["hex", "a", "one digit"],
    ["hex", "0g", "not a hex digit"],
    ["hex", "zz00", "garbage before"],
    ["hex", "00zz", "garbage after"],
    ["hex", "00 ff", "a space inside"],
    ["hex", "0x00", "a 0x prefix"],
    ["base64", "", "empty"],
    ["base64", "AAE", "unpadded"],
    ["base64", "AA", "unpadded, two characters"],
    ["base64", "AA=", "one = short"],
    ["base64", "A===", "three ="],
    ["base64", "AAAA=", "padding after a full group"],
    ["base64", "AA=A", "padding inside"],
    ["base64", "=AAA", "padding first"],
    ["base64", "-_-_", "base64url characters"],
    ["base64", "AA AA", "a space inside"],
    ["base64", "!AAA", "garbage before"],
    ["base64", "AAAA!", "garbage after"],
    ["base64url", "", "empty"],
    ["base64url", "+/+/", "base64 characters"],
    ["base64url", "AA===", "three ="],
    ["base64url", "=", "padding alone"],
    ["base64url", "AA=A", "padding inside"],
    ["base64url", "!AAA", "garbage before"],
    ["base64url", "AAA!", "garbage after"],
  ])("%s refuses %j (%s)", (encoding, text) => {
    expect(decodeStrict(text, encoding)).toBeNull();
  });

  it("reads the same text differently in each encoding", () => {
    expect(decodeStrict("abcd", "hex")?.toString("hex")).toBe("abcd");
    expect(decodeStrict("abcd", "base64")?.toString("hex")).toBe("69b71d");
    expect(decodeStrict("ab-_", "base64url")?.toString("hex")).toBe("69bfbf");
    expect(decodeStrict("ab+/", "base64url")).toBeNull();
    expect(decodeStrict("ab-_", "base64")).toBeNull();
  });
});

describe("hmac", () => {
  const key = Buffer.from("key");
  it("MACs the parts as one message: strings as UTF-8, Buffers byte for byte", () => {
    const whole = hmac("sha256", key, [Buffer.from("1764000000.é\u00ff")]);
    expect(hmac("sha256", key, ["1764000000.", "é", Buffer.from([0xc3, 0xbf])])).toEqual(whole);
    expect(hmac("sha256", key, ["1764000000.", Buffer.from([0xff])])).not.toEqual(whole);
  });

  it("uses the algorithm asked for (RFC 4231 test case 2)", () => {
    const jefe = Buffer.from("Jefe");
    const data = ["what do ya want ", "for nothing?"];
    expect(hmac("sha256", jefe, data).toString("hex")).toBe("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    expect(hmac("sha512", jefe, data).toString("hex")).toBe(
      "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
    );
    expect(hmac("sha1", jefe, data).toString("hex")).toBe("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
  });
});

describe("matchesAny (constant-time)", () => {
  const a = Buffer.alloc(32, 1);
  const b = Buffer.alloc(32, 2);
  const c = Buffer.alloc(32, 3);

  it.each([
    ["the only candidate matches the only digest", [a], [a], true],
    ["a candidate matches the second digest (rotation)", [b, a], [a], true],
    ["the second candidate matches (a list of signatures)", [a], [c, a], true],
    ["a candidate matches the first digest of two", [a, b], [c, a], true],
    ["no candidate matches", [a, b], [c], false],
    ["no candidates", [a], [], false],
    ["no digests (no usable secret)", [], [a], false],
    ["same length, one byte different", [a], [Buffer.concat([a.subarray(0, 31), Buffer.from([9])])], false],
    ["a prefix of the digest", [a], [a.subarray(0, 16)], false],
    ["the digest with a byte more", [a], [Buffer.concat([a, Buffer.from([1])])], false],
    ["an empty candidate", [a], [Buffer.alloc(0)], false],
  ] as const)("%s → %s", (_label, expected, candidates, result) => {
    expect(matchesAny(expected, candidates)).toBe(result);
  });
});

describe("parseEpoch", () => {
  it.each([
    ["1764000000", 1764000000],
    ["0", 0],
    ["1764000000123", 1764000000123],
    ["0001764000000", 1764000000],
    ["9007199254740991", Number.MAX_SAFE_INTEGER],
  ])("%s → %s", (text, value) => {
    expect(parseEpoch(text)).toBe(value);
  });

  it.each([
    ["", "empty"],
    ["+1764000000", "a sign"],
    ["-1764000000", "a minus sign"],
    ["1e3", "an exponent"],
    ["0x10", "hex"],
    ["0b1", "binary"],
    ["1764000000.5", "a fraction"],
    ["1764000000.", "a trailing dot"],
    [" 1764000000", "a space before"],
    ["1764000000 ", "a space after"],
    ["1_764_000_000", "separators"],
    ["Infinity", "Infinity"],
    ["１７６４", "non-ASCII digits"],
    ["9007199254740993", "16 digits past the largest safe integer"],
    ["00000000000000001", "more than 16 digits"],
  ])("refuses %j (%s)", (text) => {
    expect(parseEpoch(text)).toBeNull();
  });
});

describe("checkFreshness", () => {
  const now = 1_764_000_000;

  it.each([
    ["signed now", now, 300],
    ["as old as the tolerance", now - 300, 300],
    ["as far ahead as the tolerance", now + 300, 300],
    ["within a custom tolerance", now - 599, 600],
    ["exact, with no tolerance at all", now, 0],
  ])("accepts a timestamp %s", (_label, signedAt, tolerance) => {
    expect(checkFreshness(signedAt, now, tolerance)).toBeNull();
  });

  it("defaults the tolerance to 300 s", () => {
    expect(checkFreshness(now - 300, now)).toBeNull();
    expect(checkFreshness(now - 301, now)).toMatchObject({ status: 401, code: "timestamp_too_old" });
    expect(checkFreshness(now + 301, now)).toMatchObject({ status: 401, code: "timestamp_in_future" });
  });

  it("refuses one second past the window on either side, saying which and by how much", () => {
    expect(checkFreshness(now - 301, now, 300)).toEqual({
      ok: false, status: 401, code: "timestamp_too_old",
      reason: "The signed timestamp is 301 s old; the tolerance is 300 s. Sign again with the current time (a replayed request is refused).",
    });
    expect(checkFreshness(now + 301, now, 300)).toEqual({
      ok: false, status: 401, code: "timestamp_in_future",
      reason: "The signed timestamp is 301 s in the future; the tolerance is 300 s. Check the sender's clock.",
    });
    expect(checkFreshness(now - 1, now, 0)).toMatchObject({ code: "timestamp_too_old" });
    expect(checkFreshness(now + 1, now, 0)).toMatchObject({ code: "timestamp_in_future" });
  });

  it("writes the offset in whole seconds when the clock has a fraction", () => {
    expect(checkFreshness(now - 400, now + 0.6, 300)?.reason).toMatch(/^The signed timestamp is 401 s old;/);
    expect(checkFreshness(now + 400, now - 0.6, 300)?.reason).toMatch(/^The signed timestamp is 401 s in the future;/);
  });
});

describe("reading one header", () => {
  // Each case runs on the bag as received and on its index (the path verifyWebhook takes).
  const both = (headers: Record<string, string | string[] | undefined>) => [headers, indexHeaders(headers)];

  it.each([
    ["lower-case name", { "webhook-id": "msg_1" }, "Webhook-Id"],
    ["upper-case name", { "WEBHOOK-ID": "msg_1" }, "webhook-id"],
    ["mixed case", { "Webhook-ID": "msg_1" }, "webhook-id"],
    ["surrounding spaces trimmed", { "webhook-id": "  msg_1\t" }, "webhook-id"],
    ["a one-element array", { "webhook-id": ["msg_1"] }, "webhook-id"],
    ["next to other headers", { "content-type": "application/json", "webhook-id": "msg_1", "webhook-timestamp": "1" }, "webhook-id"],
    ["next to an undefined one of the same name in another case", { "webhook-id": "msg_1", "Webhook-Id": undefined }, "webhook-id"],
  ])("reads a value: %s", (_label, headers, name) => {
    for (const bag of both(headers)) expect(readHeader(bag, name)).toEqual({ value: "msg_1" });
  });

  it.each([
    ["absent", {}],
    ["undefined", { "webhook-id": undefined }],
    ["empty", { "webhook-id": "" }],
    ["only spaces", { "webhook-id": "   " }],
    ["an empty array", { "webhook-id": [] }],
    ["another header only", { "webhook-idx": "msg_1" }],
  ])("is absent when %s", (_label, headers) => {
    for (const bag of both(headers)) expect(readHeader(bag, "webhook-id")).toEqual({ absent: true });
  });

  it.each([
    ["an array of two", { "webhook-id": ["msg_1", "msg_2"] }],
    ["an array of two equal values", { "webhook-id": ["msg_1", "msg_1"] }],
    ["an array with an empty copy", { "webhook-id": ["", "msg_1"] }],
    ["two spellings", { "webhook-id": "msg_1", "Webhook-Id": "msg_2" }],
    ["two spellings, one empty", { "webhook-id": "msg_1", "WEBHOOK-ID": "" }],
    ["a spelling and an array", { "webhook-id": "msg_1", "Webhook-Id": ["msg_2"] }],
  ])("is ambiguous when sent as %s", (_label, headers) => {
    for (const bag of both(headers)) expect(readHeader(bag, "webhook-id")).toEqual({ ambiguous: true });
  });

  it("requireHeader names the header and says why when it is missing, and refuses a repeated one", () => {
    expect(requireHeader({ "x-a": "1" }, "x-a", 401, "missing_x", "why")).toBe("1");
    expect(requireHeader({}, "X-A", 400, "missing_x", "the partner sends it")).toEqual({
      ok: false, status: 400, code: "missing_x", reason: "The X-A header is missing: the partner sends it.",
    });
    expect(requireHeader({ "x-a": ["1", "2"] }, "X-A", 401, "missing_x", "why")).toEqual({
      ok: false, status: 401, code: "ambiguous_header", reason: "The X-A header was sent more than once; send it exactly once.",
    });
  });

  it("an index is a snapshot: indexing it again returns it, and it keeps no prototype names", () => {
    const index = indexHeaders({ "X-A": "1", "x-b": ["2", "3"] });
    expect(indexHeaders(index)).toBe(index);
    expect({ ...index }).toEqual({ "x-a": "1", "x-b": ["2", "3"] });
    expect(readHeader(indexHeaders({}), "constructor")).toEqual({ absent: true });
    expect(readHeader(indexHeaders({}), "__proto__")).toEqual({ absent: true });
  });
});

describe("isRejection", () => {
  it.each([
    ["a rejection", { ok: false, status: 401, code: "x", reason: "y" }, true],
    ["a string", "msg_1", false],
    ["undefined", undefined, false],
    ["null", null, false],
    ["a number", 0, false],
    ["an empty object", {}, false],
    ["an object with ok: true", { ok: true }, false],
    ["a JSON body with other fields", { id: "evt_1", type: "a" }, false],
  ])("%s → %s", (_label, value, expected) => {
    expect(isRejection(value)).toBe(expected);
  });
});

describe("the body and the event id", () => {
  const json = (text: string) => Buffer.from(text);
  it.each<[string, Buffer, string]>([
    ["empty", Buffer.alloc(0), "The body is empty; a webhook body must be a JSON object."],
    ["a byte order mark", Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]), "The body starts with a byte order mark; send JSON in UTF-8 without a BOM."],
    ["ef bb then not bf", Buffer.from([0xef, 0xbb, 0x20, 0x7b, 0x7d]), "The body is not valid UTF-8; JSON must be sent in UTF-8."],
    ["ef then not bb", Buffer.from([0xef, 0x20, 0xbf, 0x7b, 0x7d]), "The body is not valid UTF-8; JSON must be sent in UTF-8."],
    ["bb bf without ef", Buffer.from([0x20, 0xbb, 0xbf, 0x7b, 0x7d]), "The body is not valid UTF-8; JSON must be sent in UTF-8."],
    ["null", json("null"), "The body is JSON but not an object; a webhook body must be a JSON object."],
    ["an array", json("[]"), "The body is JSON but not an object; a webhook body must be a JSON object."],
    ["a number", json("1"), "The body is JSON but not an object; a webhook body must be a JSON object."],
  ])("refuses a body that is %s", (_label, body, reason) => {
    expect(parseJsonObject(body)).toEqual({ ok: false, status: 400, code: "invalid_json", reason });
  });

  it("reads an object, whitespace and non-ASCII included", () => {
    expect(parseJsonObject(json(' \n{"a":"é✓"}'))).toEqual({ a: "é✓" });
  });

  it.each([
    ["a string", "evt_1", "evt_1"], ["a safe integer", 12345, "12345"], ["zero", 0, "0"], ["255 characters", "e".repeat(255), "e".repeat(255)],
  ])("accepts an id that is %s", (_label, id, text) => {
    expect(eventIdFrom({ id, idSource: "JSON field id", type: null })).toBe(text);
  });

  it.each([
    ["missing", undefined, "it is missing"], ["null", null, "found null"], ["an object", { x: 1 }, "found object"], ["a boolean", true, "found boolean"],
    ["a fraction", 1.5, "found number"], ["an unsafe integer", 2 ** 53, "found number"], ["empty", "", "found string"], ["blank", "  \t", "found string"],
  ])("refuses an id that is %s, saying what was found", (_label, id, found) => {
    expect(eventIdFrom({ id, idSource: "JSON field data.id", type: null })).toEqual({
      ok: false, status: 400, code: "missing_event_id",
      reason: `No event id in JSON field data.id (${found}); the partner's event id is required to de-duplicate, and none is invented.`,
    });
  });

  it.each([["256 characters", "e".repeat(256)], ["a control character", "a\u0000b"], ["DEL", "a\u007fb"], ["a newline", "a\nb"]])("refuses an id with %s", (_label, id) => {
    expect(eventIdFrom({ id, idSource: "header X-Id", type: null })).toEqual({
      ok: false, status: 400, code: "invalid_event_id", reason: "The event id in header X-Id must be at most 255 characters without control characters.",
    });
  });

  it.each([
    ["a type", "order.paid", "order.paid"], ["255 characters", "t".repeat(255), "t".repeat(255)], ["256 characters", "t".repeat(256), null],
    ["empty", "", null], ["a number", 42, null], ["missing", undefined, null], ["null", null, null],
  ])("the event type: %s → %s", (_label, type, result) => {
    expect(eventTypeFrom(type)).toBe(result);
  });
});
