/**
 * API keys and their scopes through the cloud management functions' host (shared/cloud/management.ts),
 * the core every cloud's management function calls, on both backends: a key created with the
 * bootstrap token (the secret store's admin token) works at once, is confined to its application,
 * is audited, and is refused as soon as it is revoked, with no new instance.
 */
import { expect, it } from "vitest";
import { loadConfig } from "../../shared/config.js";
import { createManagementHost } from "../../shared/cloud/management.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { describeEachBackend } from "../support/databases.js";

const TOKEN = "cloud-host-bootstrap-token-0123456789";

describeEachBackend("API keys through the cloud management host", (ctx) => {
  it("creates a scoped key with the bootstrap token; the key sees its application only; revoked, it is refused at once", async () => {
    const host = createManagementHost({
      tuning: loadConfig({ ADMIN_TOKEN: TOKEN, LOG_LEVEL: "silent", ALLOWED_DESTINATIONS: "127.0.0.1" }),
      logger: createLogger({ level: "silent" }),
      database: async () => ctx.db,
      adminToken: async () => TOKEN,
      tokenSetting: "TEST_ADMIN_TOKEN",
      maxBodyBytes: 1024 * 1024,
    });
    const call = async (token: string, method: string, url: string, body?: unknown) => {
      const r = await host.handle({
        method, url,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
        body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
      });
      return { status: r.status, body: typeof r.body === "string" || Buffer.isBuffer(r.body) ? JSON.parse(String(r.body)) : r.body as any };
    };
    const app = (await call(TOKEN, "POST", "/applications", { name: "cloud tenant" })).body;
    const other = (await call(TOKEN, "POST", "/subscriptions", { url: "https://example.com/other", eventTypes: ["x.*"] })).body;
    const key = (await call(TOKEN, "POST", "/keys", { applicationId: app.id })).body;
    expect(key.key).toMatch(/^whk_/);

    const mine = await call(key.key, "POST", "/subscriptions", { url: "https://example.com/mine", eventTypes: ["x.*"] });
    expect(mine.status).toBe(201);
    expect(mine.body.applicationId).toBe(app.id);
    expect((await call(key.key, "GET", "/subscriptions")).body.subscriptions.map((s: { id: string }) => s.id)).toEqual([mine.body.id]);
    expect((await call(key.key, "GET", `/subscriptions/${other.id}`)).status).toBe(404);
    expect((await call(key.key, "GET", "/keys")).status).toBe(403);
    expect((await call(key.key, "GET", "/me")).body).toEqual({ kind: "key", keyId: key.id, applicationId: app.id, access: "write" });
    const audit = (await call(TOKEN, "GET", `/audit-log?actor=${key.id}`)).body.entries;
    expect(audit.map((e: { operation: string }) => e.operation)).toEqual(["createSubscription"]);

    expect((await call(TOKEN, "DELETE", `/keys/${key.id}`)).status).toBe(200);
    expect((await call(key.key, "GET", "/subscriptions")).status).toBe(401);
  });
});
