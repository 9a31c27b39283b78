/**
 * The admin token check (shared/server/auth.ts): `Authorization: Bearer <token>` compared in
 * constant time. A table of every header form, near misses of the token, and the empty token that
 * must match nothing.
 */
import { describe, expect, it } from "vitest";
import { bearerAuthenticator, bearerMatches } from "../../shared/server/auth.js";

const TOKEN = "s3cret-admin-token-0123456789";

describe("bearerMatches", () => {
  it.each([
    [`Bearer ${TOKEN}`],
    // The scheme's name is case-insensitive (RFC 9110 §11.1).
    [`bearer ${TOKEN}`],
    [`BEARER ${TOKEN}`],
  ])("accepts %s", (header) => {
    expect(bearerMatches(header, TOKEN)).toBe(true);
  });

  it.each([
    [undefined],
    [""],
    [TOKEN],
    ["Bearer"],
    ["Bearer "],
    [`Bearer  ${TOKEN}`],
    [`Bearer ${TOKEN} `],
    [` Bearer ${TOKEN}`],
    [`Basic ${TOKEN}`],
    [`XBearer ${TOKEN}`],
    [`Bearer:${TOKEN}`],
    [`Bearer ${TOKEN}\n`],
    [`Bearer ${TOKEN}x`],
    [`Bearer ${TOKEN.slice(0, -1)}`],
    [`Bearer ${TOKEN.slice(0, -1)}X`],
    [`Bearer ${TOKEN.toUpperCase()}`],
    [`Bearer x${TOKEN}`],
  ])("refuses %j", (header) => {
    expect(bearerMatches(header, TOKEN)).toBe(false);
  });

  it("compares bytes, not characters: a token of the same length in UTF-16 but not in UTF-8 is refused", () => {
    expect(bearerMatches("Bearer é", "e")).toBe(false);
    expect(bearerMatches("Bearer e", "é")).toBe(false);
    expect(bearerMatches("Bearer é", "é")).toBe(true);
  });

  it.each([[undefined], [""], ["Bearer"], ["Bearer "], ["Bearer x"]])("an empty token matches nothing, %j included", (header) => {
    expect(bearerMatches(header, "")).toBe(false);
  });
});

describe("bearerAuthenticator", () => {
  it("names the admin for the token and nobody otherwise", async () => {
    const authenticate = bearerAuthenticator(TOKEN);
    expect(await authenticate({ authorization: `Bearer ${TOKEN}` })).toEqual({ kind: "admin" });
    expect(await authenticate({ authorization: "Bearer nope" })).toBeUndefined();
    expect(await authenticate({})).toBeUndefined();
    expect(await bearerAuthenticator("")({ authorization: "Bearer " })).toBeUndefined();
  });
});
