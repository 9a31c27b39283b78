/**
 * The tenancy model on both backends: applications (the default one holds what existed before
 * migration 014), API keys stored hashed and identified in constant time, revocation at once,
 * application deletion that loses nothing silently, and the audit log's pages.
 */
import { createHash } from "node:crypto";
import { expect, it } from "vitest";
import { createSubscription } from "../../shared/outbound/subscriptions.js";
import { enqueue, enqueueMany } from "../../shared/outbound/enqueue.js";
import { createApiKey, identifyKey, listApiKeys, revokeApiKey } from "../../shared/tenancy/apiKeys.js";
import { ApplicationInUseError, createApplication, DEFAULT_APPLICATION_ID, deleteApplication, getApplication, listApplications } from "../../shared/tenancy/applications.js";
import { listAuditLog, recordChange } from "../../shared/tenancy/auditLog.js";
import { apiKeyAuthenticator } from "../../shared/tenancy/authenticate.js";
import { describeEachBackend } from "../support/databases.js";

describeEachBackend("tenancy model", (ctx) => {
  it("has the default application from the migration; creates, lists and gets others", async () => {
    expect((await getApplication(ctx.db, DEFAULT_APPLICATION_ID)).name).toBe("default");
    const a = await createApplication(ctx.db, { name: "Acme" });
    expect(a.id).toMatch(/^app_[A-Za-z0-9_-]{16}$/);
    const ids = (await listApplications(ctx.db)).map((x) => x.id);
    expect(ids).toContain(a.id);
    expect(ids).toContain(DEFAULT_APPLICATION_ID);
    await expect(createApplication(ctx.db, { name: "" })).rejects.toThrow(/name/);
    await expect(getApplication(ctx.db, "app_nope")).rejects.toThrow(/No application/);
  });

  it("stores only the SHA-256 of a key, identifies it, and refuses it once revoked", async () => {
    const created = await createApiKey(ctx.db, { access: "read" }, { createdBy: "bootstrap" });
    expect(created.key).toMatch(/^whk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(created.id).toBe(`key_${created.key.slice(4, 20)}`);
    const { rows } = await ctx.db.query<Record<string, unknown>>("SELECT * FROM management_api_keys WHERE id = $1", [created.id]);
    const raw = JSON.stringify(rows[0], (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v));
    expect(raw).not.toContain(created.key.slice(21));
    expect(Buffer.from(rows[0]!.secret_sha256 as Uint8Array).toString("hex")).toBe(createHash("sha256").update(created.key).digest("hex"));

    expect(await identifyKey(ctx.db, created.key)).toEqual({ keyId: created.id, applicationId: null, access: "read" });
    // The same id with another secret, a malformed key, an unknown id: nobody.
    expect(await identifyKey(ctx.db, `${created.key.slice(0, 21)}${"A".repeat(43)}`)).toBeUndefined();
    expect(await identifyKey(ctx.db, created.key.slice(0, -1))).toBeUndefined();
    expect(await identifyKey(ctx.db, `whk_${"0".repeat(16)}_${created.key.slice(21)}`)).toBeUndefined();

    const authenticate = apiKeyAuthenticator(ctx.db, "bootstrap-token-0123456789");
    expect(await authenticate({ authorization: "Bearer bootstrap-token-0123456789" })).toEqual({ kind: "admin" });
    expect(await authenticate({ authorization: `Bearer ${created.key}` })).toEqual({ kind: "key", keyId: created.id, applicationId: null, access: "read" });
    expect(await authenticate({ authorization: "Bearer nothing" })).toBeUndefined();
    expect(await authenticate({})).toBeUndefined();

    const revoked = await revokeApiKey(ctx.db, created.id, { revokedBy: "bootstrap" });
    expect(revoked.revokedAt).not.toBeNull();
    expect(await identifyKey(ctx.db, created.key)).toBeUndefined();
    await expect(revokeApiKey(ctx.db, created.id, { revokedBy: "bootstrap" })).rejects.toThrow(/No API key/);
    expect((await listApiKeys(ctx.db)).map((k) => k.id)).toContain(created.id);
    expect((await listApiKeys(ctx.db, { active: true })).map((k) => k.id)).not.toContain(created.id);
  });

  it("scopes a key to a live application only", async () => {
    const app = await createApplication(ctx.db, { name: "scoped" });
    const k = await createApiKey(ctx.db, { applicationId: app.id }, { createdBy: "bootstrap" });
    expect(await identifyKey(ctx.db, k.key)).toEqual({ keyId: k.id, applicationId: app.id, access: "write" });
    await expect(createApiKey(ctx.db, { applicationId: "app_missing" }, { createdBy: "bootstrap" })).rejects.toThrow(/No application/);
    await expect(createApiKey(ctx.db, { access: "admin" }, { createdBy: "bootstrap" })).rejects.toThrow(/access/);
  });

  it("deletes an application only with cascade while it has subscriptions; pending deliveries are cancelled and kept, its keys revoked", async () => {
    const app = await createApplication(ctx.db, { name: "leaving" });
    const sub = await createSubscription(ctx.db, { url: "https://example.com/hooks", eventTypes: ["leave.*"], applicationId: app.id });
    const sent = await enqueue(ctx.db, { id: "leave-1", type: "leave.now", data: {}, applicationId: app.id });
    expect(sent.deliveries.map((d) => d.subscriptionId)).toEqual([sub.id]);
    const key = await createApiKey(ctx.db, { applicationId: app.id }, { createdBy: "bootstrap" });

    const refused = await deleteApplication(ctx.db, app.id).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApplicationInUseError);
    expect((refused as ApplicationInUseError).counts).toEqual({ subscriptions: 1, pendingDeliveries: 1 });

    const deleted = await deleteApplication(ctx.db, app.id, { cascade: true, revokedBy: "bootstrap" });
    expect(deleted).toMatchObject({ id: app.id, deletedSubscriptions: 1, cancelledDeliveries: 1, revokedKeys: 1 });
    const { rows } = await ctx.db.query<{ status: string }>("SELECT status FROM outbound_deliveries WHERE id = $1", [sent.deliveries[0]!.id]);
    expect(rows[0]!.status).toBe("cancelled");
    expect(await identifyKey(ctx.db, key.key)).toBeUndefined();
    await expect(getApplication(ctx.db, app.id)).rejects.toThrow(/No application/);
    await expect(deleteApplication(ctx.db, app.id, { cascade: true })).rejects.toThrow(/No application/);
    await expect(deleteApplication(ctx.db, DEFAULT_APPLICATION_ID, { cascade: true })).rejects.toBeInstanceOf(ApplicationInUseError);
    // A deleted application takes no new subscriptions or events.
    await expect(createSubscription(ctx.db, { url: "https://example.com/x", eventTypes: ["a"], applicationId: app.id })).rejects.toThrow(/No application/);
    await expect(enqueue(ctx.db, { type: "leave.now", data: {}, applicationId: app.id })).rejects.toThrow(/No application/);
  });

  it("fans an event out to its own application's subscriptions only", async () => {
    const a = await createApplication(ctx.db, { name: "A" });
    const b = await createApplication(ctx.db, { name: "B" });
    const subA = await createSubscription(ctx.db, { url: "https://a.example/h", eventTypes: ["fan.*"], applicationId: a.id });
    const subB = await createSubscription(ctx.db, { url: "https://b.example/h", eventTypes: ["fan.*"], applicationId: b.id });
    const subDefault = await createSubscription(ctx.db, { url: "https://d.example/h", eventTypes: ["fan.*"] });
    expect((await enqueue(ctx.db, { id: "fan-a", type: "fan.x", data: 1, applicationId: a.id })).deliveries.map((d) => d.subscriptionId)).toEqual([subA.id]);
    expect((await enqueue(ctx.db, { id: "fan-b", type: "fan.x", data: 1, applicationId: b.id })).deliveries.map((d) => d.subscriptionId)).toEqual([subB.id]);
    expect((await enqueue(ctx.db, { id: "fan-d", type: "fan.x", data: 1 })).deliveries.map((d) => d.subscriptionId)).toEqual([subDefault.id]);
    // The same id again for its own application is a repeat; for another, a conflict.
    expect((await enqueue(ctx.db, { id: "fan-a", type: "fan.x", data: 1, applicationId: a.id })).created).toBe(false);
    await expect(enqueue(ctx.db, { id: "fan-a", type: "fan.x", data: 1, applicationId: b.id })).rejects.toThrow(/already enqueued/);
    await expect(enqueue(ctx.db, { type: "fan.x", data: 1, applicationId: "app_missing" })).rejects.toThrow(/No application/);
  });

  it("a backfill sends its own application's past events only", async () => {
    const a = await createApplication(ctx.db, { name: "backfill A" });
    const b = await createApplication(ctx.db, { name: "backfill B" });
    await enqueue(ctx.db, { id: "bf-a", type: "bf.x", data: 1, applicationId: a.id });
    await enqueue(ctx.db, { id: "bf-b", type: "bf.x", data: 1, applicationId: b.id });
    await enqueue(ctx.db, { id: "bf-d", type: "bf.x", data: 1 });
    const since = new Date(Date.now() - 60_000).toISOString();
    const sub = await createSubscription(ctx.db, { url: "https://a.example/bf", eventTypes: ["bf.*"], applicationId: a.id, backfill: { since } });
    expect(sub.backfilled).toBe(1);
    const { rows } = await ctx.db.query<{ event_id: string }>("SELECT event_id FROM outbound_deliveries WHERE subscription_id = $1", [sub.id]);
    expect(rows.map((r) => r.event_id)).toEqual(["bf-a"]);
  });

  it("a batch may mix applications; one unknown application writes nothing of it; an id twice in two applications is a conflict", async () => {
    const a = await createApplication(ctx.db, { name: "batch A" });
    const subA = await createSubscription(ctx.db, { url: "https://a.example/b", eventTypes: ["mix.*"], applicationId: a.id });
    const subD = await createSubscription(ctx.db, { url: "https://d.example/b", eventTypes: ["mix.*"] });
    const results = await enqueueMany(ctx.db, [{ id: "mix-a", type: "mix.x", data: 1, applicationId: a.id }, { id: "mix-d", type: "mix.x", data: 1 }]);
    expect(results.map((r) => r.deliveries.map((d) => d.subscriptionId))).toEqual([[subA.id], [subD.id]]);
    await expect(enqueueMany(ctx.db, [{ id: "mix-new", type: "mix.x", data: 1 }, { id: "mix-bad", type: "mix.x", data: 1, applicationId: "app_missing" }])).rejects.toThrow(/No application with id "app_missing"/);
    expect((await ctx.db.query("SELECT id FROM outbound_events WHERE id IN ('mix-new', 'mix-bad')")).rows).toEqual([]);
    await expect(enqueueMany(ctx.db, [{ id: "mix-twice", type: "mix.x", data: 1 }, { id: "mix-twice", type: "mix.x", data: 1, applicationId: a.id }])).rejects.toThrow(/share the id/);
  });

  it("pages the audit log newest first", async () => {
    for (let i = 0; i < 3; i++) await recordChange(ctx.db, { actor: "bootstrap", operation: `op${i}`, method: "POST", path: `/x/${i}`, resourceId: `r${i}`, applicationId: null, status: 200 });
    const first = await listAuditLog(ctx.db, { limit: 2, actor: "bootstrap" });
    expect(first.map((e) => e.operation)).toEqual(["op2", "op1"]);
    const second = await listAuditLog(ctx.db, { limit: 2, actor: "bootstrap", before: first[1]!.id });
    expect(second.map((e) => e.operation)).toEqual(["op0"]);
  });
});
