/**
 * API keys (shared/tenancy/apiKeys.ts) on one PostgreSQL database for the whole file, so that it is
 * fast enough to judge the module's mutants: the key's format, what is stored (only the SHA-256),
 * the lookup by id and the constant-time comparison, revocation, the deleted application's keys,
 * and a table of tokens that look like keys but are not. test/tenancy/model.test.ts covers the same
 * model on both backends, together with applications and the audit log.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../shared/db/migrate.js";
import { openDatabase } from "../../shared/db/open.js";
import type { Database } from "../../shared/db/port.js";
import { NotFoundError, OutboundValidationError } from "../../shared/outbound/errors.js";
import { createApiKey, identifyKey, listApiKeys, revokeApiKey } from "../../shared/tenancy/apiKeys.js";
import { createApplication } from "../../shared/tenancy/applications.js";
import { apiKeyAuthenticator } from "../../shared/tenancy/authenticate.js";
import { SESSION_COOKIE } from "../../shared/portal/sessionAuth.js";
import { createPortalLink, csrfTokenFor, openPortalSession } from "../../shared/portal/sessions.js";
import { createServerDatabase, postgresAvailable } from "../support/databases.js";

const available = await postgresAvailable();
const sha256 = (text: string) => createHash("sha256").update(Buffer.from(text, "utf8")).digest();

describe.skipIf(!available)("API keys", () => {
  let db: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const created = await createServerDatabase();
    drop = created.drop;
    db = await openDatabase({ databaseUrl: created.url, poolSize: 2 });
    await migrate(db);
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  it("creates whk_<16 hex>_<43 base64url> with id key_<the 16 hex>, write by default, and stores only its SHA-256", async () => {
    const k = await createApiKey(db, undefined, { createdBy: "bootstrap" });
    const m = /^whk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/.exec(k.key);
    expect(m).not.toBeNull();
    expect(k.id).toBe(`key_${m![1]}`);
    expect(k).toMatchObject({ applicationId: null, access: "write", description: null, createdBy: "bootstrap", revokedAt: null, revokedBy: null });
    expect(k.createdAt).toBeInstanceOf(Date);
    const { rows } = await db.query<Record<string, unknown>>("SELECT * FROM management_api_keys WHERE id = $1", [k.id]);
    expect(Buffer.from(rows[0]!.secret_sha256 as Uint8Array).equals(sha256(k.key))).toBe(true);
    expect(JSON.stringify(rows[0])).not.toContain(m![2]);
    const again = await createApiKey(db, null, { createdBy: "bootstrap" });
    expect(again.key.slice(21)).not.toBe(k.key.slice(21));
    expect(again.id).not.toBe(k.id);
  });

  it("identifies a live key: its id, application and access; read and write as given", async () => {
    const read = await createApiKey(db, { access: "read", description: "dashboards" }, { createdBy: "ops" });
    expect(read.description).toBe("dashboards");
    expect(await identifyKey(db, read.key)).toEqual({ keyId: read.id, applicationId: null, access: "read" });
    const write = await createApiKey(db, { access: "write" }, { createdBy: "ops" });
    expect(await identifyKey(db, write.key)).toEqual({ keyId: write.id, applicationId: null, access: "write" });
    const app = await createApplication(db, { name: "Acme" });
    const appKey = await createApiKey(db, { applicationId: app.id, access: "read" }, { createdBy: "ops" });
    expect(appKey.applicationId).toBe(app.id);
    expect(await identifyKey(db, appKey.key)).toEqual({ keyId: appKey.id, applicationId: app.id, access: "read" });
  });

  it("refuses tokens that are not the key: each differs from a live one in one way", async () => {
    const { key, id } = await createApiKey(db, {}, { createdBy: "ops" });
    const hex = key.slice(4, 20);
    const secret = key.slice(21);
    const last = secret.at(-1) === "A" ? "B" : "A";
    const other = await createApiKey(db, {}, { createdBy: "ops" });
    const cases: Array<[string, string]> = [
      ["the secret's last character changed", `${key.slice(0, -1)}${last}`],
      ["the secret's first character changed", `whk_${hex}_${secret[0] === "A" ? "B" : "A"}${secret.slice(1)}`],
      ["another key's secret under this id", `whk_${hex}_${other.key.slice(21)}`],
      ["this secret under another key's id", `whk_${other.key.slice(4, 20)}_${secret}`],
      ["truncated", key.slice(0, -1)],
      ["a character appended", `${key}A`],
      ["the id in capitals", `whk_${hex.toUpperCase()}_${secret}`],
      ["another prefix", `whx_${hex}_${secret}`],
      ["no prefix", `${hex}_${secret}`],
      ["text before it", ` ${key}`],
      ["text after it", `${key}\n`],
      ["a Bearer header rather than the token", `Bearer ${key}`],
      ["the id alone", id],
      ["empty", ""],
      ["a 15-hex id", `whk_${hex.slice(1)}_${secret}`],
      ["a 17-hex id", `whk_${hex}0_${secret}`],
      ["a non-hex id", `whk_${hex.slice(0, 15)}g_${secret}`],
      ["a 42-character secret", `whk_${hex}_${secret.slice(1)}`],
      ["a secret with a character outside base64url", `whk_${hex}_${secret.slice(0, 42)}+`],
    ];
    for (const [what, token] of cases) expect(await identifyKey(db, token), what).toBeUndefined();
    expect(await identifyKey(db, key)).toEqual({ keyId: id, applicationId: null, access: "write" });
  });

  it("a well-formed key whose id is unknown is refused", async () => {
    expect(await identifyKey(db, `whk_${"0".repeat(16)}_${"A".repeat(43)}`)).toBeUndefined();
  });

  it("a stored digest of another length (a damaged row) refuses the key instead of throwing", async () => {
    const { key, id } = await createApiKey(db, {}, { createdBy: "ops" });
    await db.query("UPDATE management_api_keys SET secret_sha256 = substring(secret_sha256 from 1 for 31) WHERE id = $1", [id]);
    expect(await identifyKey(db, key)).toBeUndefined();
    await db.query("UPDATE management_api_keys SET secret_sha256 = $2 WHERE id = $1", [id, Buffer.concat([sha256(key), Buffer.alloc(1)])]);
    expect(await identifyKey(db, key)).toBeUndefined();
  });

  it("revokes at once: the key is refused, the row says by whom; revoking again or an unknown id is NotFoundError", async () => {
    const k = await createApiKey(db, {}, { createdBy: "ops" });
    const revoked = await revokeApiKey(db, k.id, { revokedBy: "alice" });
    expect(revoked).toMatchObject({ id: k.id, revokedBy: "alice" });
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    expect(await identifyKey(db, k.key)).toBeUndefined();
    await expect(revokeApiKey(db, k.id, { revokedBy: "alice" })).rejects.toThrow(NotFoundError);
    await expect(revokeApiKey(db, "key_nope", { revokedBy: "alice" })).rejects.toThrow(/No API key with id "key_nope"/);
  });

  it("an application key names a live application; a deleted application's keys are refused", async () => {
    await expect(createApiKey(db, { applicationId: "app_nope" }, { createdBy: "ops" })).rejects.toThrow(/No application with id "app_nope"/);
    const app = await createApplication(db, { name: "Gone" });
    const k = await createApiKey(db, { applicationId: app.id }, { createdBy: "ops" });
    expect(await identifyKey(db, k.key)).toBeDefined();
    // Marked deleted without revoking its keys (as a crash between the two steps would leave it).
    await db.query("UPDATE outbound_applications SET deleted_at = now() WHERE id = $1", [app.id]);
    expect(await identifyKey(db, k.key)).toBeUndefined();
    await expect(createApiKey(db, { applicationId: app.id }, { createdBy: "ops" })).rejects.toThrow(NotFoundError);
  });

  it.each([
    ["an unknown field", { scope: "all" }, /scope/],
    ["an unknown access", { access: "admin" }, /access/],
    ["an empty application id", { applicationId: "" }, /applicationId/],
    ["an application id over 200 characters", { applicationId: "a".repeat(201) }, /applicationId/],
    ["a description over 500 characters", { description: "d".repeat(501) }, /description/],
    ["a description that is not text", { description: 5 }, /description/],
  ])("refuses %s with a validation error naming the field", async (_, input, field) => {
    const error = await createApiKey(db, input, { createdBy: "ops" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboundValidationError);
    expect((error as Error).message).toMatch(/^Invalid API key: /);
    expect((error as Error).message).toMatch(field);
  });

  it("accepts the limits: an application id of 200 characters (not found, so past validation), a description of 500", async () => {
    await expect(createApiKey(db, { applicationId: "a".repeat(200) }, { createdBy: "ops" })).rejects.toThrow(NotFoundError);
    expect((await createApiKey(db, { description: "d".repeat(500) }, { createdBy: "ops" })).description).toBe("d".repeat(500));
  });

  it("the authenticator: the admin token is the admin; Bearer whk_… is that key; anything else is nobody", async () => {
    const admin = "admin-token-0123456789";
    const auth = apiKeyAuthenticator(db, admin);
    const app = await createApplication(db, { name: "Auth" });
    const k = await createApiKey(db, { applicationId: app.id, access: "read" }, { createdBy: "ops" });
    expect(await auth({ authorization: `Bearer ${admin}` })).toEqual({ kind: "admin" });
    expect(await auth({ authorization: `Bearer ${k.key}` })).toEqual({ kind: "key", keyId: k.id, applicationId: app.id, access: "read" });
    // The scheme's name is case-insensitive (RFC 9110).
    expect(await auth({ authorization: `bearer ${k.key}` })).toEqual({ kind: "key", keyId: k.id, applicationId: app.id, access: "read" });
    const refused: Array<[string, string | undefined]> = [
      ["no header", undefined],
      ["an empty header", ""],
      ["the key without the scheme", k.key],
      ["another scheme", `Basic ${k.key}`],
      ["text before the scheme", `xBearer ${k.key}`],
      ["two spaces", `Bearer  ${k.key}`],
      ["text after the key", `Bearer ${k.key} x`],
      ["a wrong admin token", `Bearer ${admin}x`],
      ["a key changed in its last character", `Bearer ${k.key.slice(0, -1)}${k.key.endsWith("A") ? "B" : "A"}`],
    ];
    for (const [what, authorization] of refused) expect(await auth({ authorization }), what).toBeUndefined();
    await revokeApiKey(db, k.id, { revokedBy: "ops" });
    expect(await auth({ authorization: `Bearer ${k.key}` })).toBeUndefined();
  });

  it("without an Authorization header, a portal session's cookie: the request's method decides the CSRF check, a GET when none is given", async () => {
    const auth = apiKeyAuthenticator(db, "an-admin-token-of-enough-length");
    const app = await createApplication(db, { name: "Portal" });
    const link = await createPortalLink(db, app.id, { access: "write" }, { createdBy: "ops" });
    const { session, token } = await openPortalSession(db, link.token);
    const cookie = `${SESSION_COOKIE}=${token}`;
    const asSession = { kind: "key", keyId: session.sessionId, applicationId: app.id, access: "write" };
    expect(await auth({ cookie }, { method: "GET" })).toMatchObject(asSession);
    expect(await auth({ cookie })).toMatchObject(asSession); // no method given: read as a GET
    // A change made with the cookie needs the session's CSRF token.
    await expect(auth({ cookie }, { method: "POST" })).rejects.toMatchObject({ code: "csrf_failed" });
    expect(await auth({ cookie, "x-csrf-token": csrfTokenFor(token) }, { method: "POST" })).toMatchObject(asSession);
    // With an Authorization header the cookie is not read.
    expect(await auth({ cookie, authorization: "Bearer whk_nothing" }, { method: "GET" })).toBeUndefined();
  });

  it("lists keys in id order, 100 a page by default, after an id, by application, active only", async () => {
    const app = await createApplication(db, { name: "Listed" });
    // Keys outside the application, so that the filter is tested even when this test runs alone.
    await createApiKey(db, {}, { createdBy: "ops" });
    await createApiKey(db, { applicationId: (await createApplication(db, { name: "Other" })).id }, { createdBy: "ops" });
    const mine: Array<{ id: string }> = [];
    for (let i = 0; i < 3; i++) mine.push(await createApiKey(db, { applicationId: app.id }, { createdBy: "ops" }));
    await revokeApiKey(db, mine[1]!.id, { revokedBy: "ops" });
    const ids = mine.map((k) => k.id).sort();
    expect((await listApiKeys(db, { applicationId: app.id })).map((k) => k.id)).toEqual(ids);
    expect((await listApiKeys(db, { applicationId: app.id, active: true })).map((k) => k.id)).toEqual(ids.filter((id) => id !== mine[1]!.id));
    expect((await listApiKeys(db, { applicationId: app.id, active: false })).map((k) => k.id)).toEqual(ids);
    expect((await listApiKeys(db, { applicationId: app.id, after: ids[0] })).map((k) => k.id)).toEqual(ids.slice(1));
    expect((await listApiKeys(db, { applicationId: app.id, limit: 2 })).map((k) => k.id)).toEqual(ids.slice(0, 2));
    const listed = (await listApiKeys(db, { applicationId: app.id }))[0]!;
    expect(listed).not.toHaveProperty("key");
    expect(listed).toMatchObject({ applicationId: app.id, access: "write", createdBy: "ops" });
    while ((await listApiKeys(db, { limit: 1000 })).length <= 100) await createApiKey(db, {}, { createdBy: "ops" });
    const page = await listApiKeys(db);
    expect(page).toHaveLength(100);
    expect(page.map((k) => k.id)).toEqual([...page.map((k) => k.id)].sort());
  });
});
