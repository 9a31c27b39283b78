/**
 * Authorization and the audit log (shared/tenancy/access.ts) on one PostgreSQL database for the
 * file, calling wrapped handlers directly, so that the module's mutants are judged in seconds:
 * read-only keys, operator-only operations, another application's resource answered as missing
 * (for every resource kind), the audit entry of a change and what it records, and the list and
 * creation scopes. test/tenancy/scopes.test.ts walks every operation of the real API on both
 * backends; this file is the fast, per-rule half.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Logger } from "pino";
import { migrate } from "../../shared/db/migrate.js";
import { openDatabase } from "../../shared/db/open.js";
import type { Database, Queryable } from "../../shared/db/port.js";
import { enqueue } from "../../shared/outbound/enqueue.js";
import { NotFoundError } from "../../shared/outbound/errors.js";
import { createSubscription } from "../../shared/outbound/subscriptions.js";
import { HttpError, type Request, type Response, type Route } from "../../shared/server/core.js";
import type { OperationDoc } from "../../shared/server/operation.js";
import { actorFor, inApplication, listScope, ownerOf, targetApplication, UndeclaredAccessError, withAccessControl } from "../../shared/tenancy/access.js";
import type { AccessRule } from "../../shared/tenancy/accessRule.js";
import { createApplication, DEFAULT_APPLICATION_ID } from "../../shared/tenancy/applications.js";
import { listAuditLog } from "../../shared/tenancy/auditLog.js";
import type { AnyPrincipal } from "../../shared/tenancy/principal.js";
import { createServerDatabase, postgresAvailable } from "../support/databases.js";

const available = await postgresAvailable();

const admin: AnyPrincipal = { kind: "admin" };
const key = (applicationId: string | null, access: "read" | "write" = "write", keyId = "key_0000000000000001"): AnyPrincipal => ({ kind: "key", keyId, applicationId, access });

function request(principal: AnyPrincipal | undefined, params: Record<string, string> = {}, method = "POST", path = "/things"): Request {
  return {
    principal, method, path, basePath: "", params, query: new URLSearchParams(), headers: {},
    body: async () => Buffer.alloc(0), json: async <T>() => ({}) as T,
  };
}

async function refusal(p: Promise<unknown>): Promise<HttpError> {
  const error = await p.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(HttpError);
  return error as HttpError;
}

describe("list and creation scopes (no database)", () => {
  it("an application key sees its own application; naming another is 404 as if it did not exist", () => {
    expect(listScope(request(key("app_a")))).toBe("app_a");
    expect(listScope(request(key("app_a")), "app_a")).toBe("app_a");
    expect(() => listScope(request(key("app_a")), "app_b")).toThrow(NotFoundError);
    expect(() => listScope(request(key("app_a")), "app_b")).toThrow('No application with id "app_b".');
    expect(listScope(request(key(null)), "app_b")).toBe("app_b");
    expect(listScope(request(admin), "app_b")).toBe("app_b");
    expect(listScope(request(admin))).toBeUndefined();
    expect(listScope(request(key(null)))).toBeUndefined();
  });

  it("a creation goes to the key's application, else the one named, else the default one", () => {
    expect(targetApplication(request(key("app_a")))).toBe("app_a");
    expect(targetApplication(request(key("app_a")), null)).toBe("app_a");
    expect(() => targetApplication(request(key("app_a")), "app_b")).toThrow(NotFoundError);
    expect(targetApplication(request(admin), "app_b")).toBe("app_b");
    expect(targetApplication(request(admin), null)).toBe(DEFAULT_APPLICATION_ID);
    expect(targetApplication(request(admin))).toBe(DEFAULT_APPLICATION_ID);
  });

  it("settles a body's applicationId, and leaves what the schema must refuse as it is", () => {
    expect(inApplication(request(key("app_a")), { url: "u" })).toEqual({ url: "u", applicationId: "app_a" });
    expect(inApplication(request(admin), { url: "u", applicationId: null })).toEqual({ url: "u", applicationId: DEFAULT_APPLICATION_ID });
    expect(inApplication(request(admin), { applicationId: "app_b" })).toEqual({ applicationId: "app_b" });
    expect(() => inApplication(request(key("app_a")), { applicationId: "app_b" })).toThrow(NotFoundError);
    for (const body of [null, "text", 5, [{ applicationId: "app_b" }], { applicationId: 5 }, { applicationId: ["app_b"] }, { applicationId: false }]) {
      expect(inApplication(request(key("app_a")), body)).toBe(body);
    }
  });

  it("names who acted: the key id, or bootstrap for the admin token", () => {
    expect(actorFor(request(key(null, "write", "key_abc")))).toBe("key_abc");
    expect(actorFor(request(admin))).toBe("bootstrap");
    expect(actorFor(request(undefined))).toBe("bootstrap");
  });
});

describe.skipIf(!available)("withAccessControl", () => {
  let db: Database;
  let drop: () => Promise<void>;
  let appA: string;
  let appB: string;
  const owned: Record<string, { subscription: string; event: string; delivery: string }> = {};

  beforeAll(async () => {
    const created = await createServerDatabase();
    drop = created.drop;
    db = await openDatabase({ databaseUrl: created.url, poolSize: 2 });
    await migrate(db);
    appA = (await createApplication(db, { name: "A" })).id;
    appB = (await createApplication(db, { name: "B" })).id;
    for (const app of [appA, appB]) {
      const sub = await createSubscription(db, { url: "https://example.com/hooks", eventTypes: ["t.*"], applicationId: app });
      const sent = await enqueue(db, { id: `evt-${app}`, type: "t.x", data: {}, applicationId: app });
      owned[app] = { subscription: sub.id, event: sent.eventId, delivery: sent.deliveries[0]!.id };
    }
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  const doc = (operationId: string, access?: AccessRule): OperationDoc => ({ operationId, summary: operationId, tag: "Test", ...(access ? { access } : {}) }) as OperationDoc;
  let calls = 0;
  const route = (access: AccessRule | undefined, respond: (req: Request) => Response = () => ({ status: 200, body: { ok: true } }), operationId = "testOp"): Route => ({
    method: "POST", path: "/things/:id", auth: "admin", doc: doc(operationId, access),
    handler: async (req) => { calls++; return respond(req); },
  });
  const wrap = (r: Route, q: Queryable = db, logger?: Logger) => withAccessControl([r], q, logger)[0]!.handler;
  const auditOf = async (operation: string) => listAuditLog(db, { operation });

  it("refuses at startup an authenticated route that declares no access, naming it and what to add; public routes are left as they are", () => {
    const pub: Route = { method: "GET", path: "/health", auth: "none", handler: async () => ({ status: 200 }) };
    const bare: Route = { method: "DELETE", path: "/x/:id", auth: "admin", handler: async () => ({ status: 204 }) };
    const error = (() => { try { withAccessControl([pub, bare, { ...bare, path: "/y" }], db); } catch (e) { return e as Error; } return undefined; })();
    expect(error).toBeInstanceOf(UndeclaredAccessError);
    expect(error!.name).toBe("UndeclaredAccessError");
    expect(error!.message).toMatch(/^2 authenticated route\(s\) declare no access: DELETE \/x\/:id, DELETE \/y\. Add `access: /);
    expect((error as UndeclaredAccessError).routes).toEqual(["DELETE /x/:id", "DELETE /y"]);
    const wrapped = withAccessControl([pub], db);
    expect(wrapped[0]).toBe(pub);
  });

  it("allowed, an undeclared route is operator-write-only, and its operation is named by method and path", async () => {
    const bare: Route = { method: "DELETE", path: "/x/:id", auth: "admin", handler: async () => ({ status: 204 }) };
    const [guarded] = withAccessControl([bare], db, undefined, { allowUndeclared: true });
    expect((await refusal(guarded!.handler(request(key(null, "read"))))).code).toBe("read_only");
    const forbidden = await refusal(guarded!.handler(request(key(appA))));
    expect({ status: forbidden.status, code: forbidden.code }).toEqual({ status: 403, code: "forbidden" });
    expect(forbidden.message).toBe(`DELETE /x/:id is for operators; this key (key_0000000000000001) is scoped to application ${appA}.`);
    expect((await guarded!.handler(request(admin, {}, "DELETE", "/x/1"))).status).toBe(204);
    expect((await listAuditLog(db, { operation: "DELETE /x/:id" })).map((e) => e.status)).toEqual([204]);
  });

  it("a read-only key cannot change anything (the handler is not called); it reads", async () => {
    const before = calls;
    const error = await refusal(wrap(route({ action: "write", audience: "application" }, undefined, "changeIt"))(request(key(appA, "read", "key_ro"))));
    expect({ status: error.status, code: error.code }).toEqual({ status: 403, code: "read_only" });
    expect(error.message).toBe("This key (key_ro) is read-only: changeIt changes something; use a key with write access.");
    await refusal(wrap(route({ action: "write", audience: "operator" }))(request(key(null, "read"))));
    expect(calls).toBe(before);
    expect((await wrap(route({ action: "read", audience: "application" }))(request(key(appA, "read")))).status).toBe(200);
    expect((await wrap(route({ action: "read", audience: "operator" }))(request(key(null, "read")))).status).toBe(200);
  });

  it("an application key cannot call an operator operation, even to read; operator keys and the admin token can", async () => {
    const op = wrap(route({ action: "read", audience: "operator" }, undefined, "operatorRead"));
    const error = await refusal(op(request(key(appA))));
    expect({ status: error.status, code: error.code }).toEqual({ status: 403, code: "forbidden" });
    expect(error.message).toBe(`operatorRead is for operators; this key (key_0000000000000001) is scoped to application ${appA}.`);
    expect((await op(request(key(null)))).status).toBe(200);
    expect((await op(request(admin))).status).toBe(200);
    expect((await op(request(undefined))).status).toBe(200);
  });

  it.each([
    ["application", "application"],
    ["subscription", "subscription"],
    ["event", "event"],
    ["delivery", "delivery"],
    ["deadLetter", "dead letter"],
  ] as const)("another application's %s answers 404 exactly as a missing one; its own passes", async (kind, noun) => {
    const idOf = (app: string) => (kind === "application" ? app : kind === "deadLetter" ? owned[app]!.delivery : owned[app]![kind]);
    const handler = wrap(route({ action: "read", audience: "application", resource: kind }));
    for (const id of [idOf(appB), `${kind}_missing`]) {
      const error = await refusal(handler(request(key(appA), { id })));
      expect({ status: error.status, code: error.code, message: error.message, details: error.details })
        .toEqual({ status: 404, code: "not_found", message: `No ${noun} with id ${JSON.stringify(id)}.`, details: { entity: noun, id } });
    }
    expect((await handler(request(key(appA), { id: idOf(appA) }))).status).toBe(200);
    expect((await handler(request(key(appB), { id: idOf(appB) }))).status).toBe(200);
    // Operators see every application's.
    expect((await handler(request(key(null), { id: idOf(appB) }))).status).toBe(200);
    expect(await ownerOf(db, kind, idOf(appB))).toBe(appB);
    expect(await ownerOf(db, kind, `${kind}_missing`)).toBeNull();
  });

  it("reads the resource id from the parameter the rule names", async () => {
    const handler = wrap(route({ action: "read", audience: "application", resource: "subscription", param: "subId" }));
    expect((await refusal(handler(request(key(appA), { subId: owned[appB]!.subscription, id: owned[appA]!.subscription })))).status).toBe(404);
    expect((await handler(request(key(appA), { subId: owned[appA]!.subscription, id: owned[appB]!.subscription }))).status).toBe(200);
  });

  it("a rule naming a parameter the route lacks fails closed for application keys instead of skipping the check", async () => {
    // The route's handler would read its id from `id`; the rule (by mistake) names `subId`.
    const handler = wrap(route({ action: "read", audience: "application", resource: "subscription", param: "subId" }, undefined, "misdeclared"));
    const error = await refusal(handler(request(key(appA), { id: owned[appB]!.subscription })));
    expect({ status: error.status, code: error.code }).toEqual({ status: 403, code: "forbidden" });
    expect(error.message).toBe('misdeclared names its subscription by the path parameter "subId", which this request lacks: refused to application keys.');
    expect((await handler(request(key(null), { id: owned[appB]!.subscription }))).status).toBe(200);
    const byDefault = wrap(route({ action: "read", audience: "application", resource: "event" }, undefined, "misdeclared"));
    expect((await refusal(byDefault(request(key(appA), {})))).message).toBe('misdeclared names its event by the path parameter "id", which this request lacks: refused to application keys.');
  });

  it("records a successful change: who, what, the resource and its application; not a failed one, not a read", async () => {
    const change = wrap(route({ action: "write", audience: "application", resource: "subscription" }, () => ({ status: 200, body: {} }), "auditChange"));
    await change(request(key(appA, "write", "key_w1"), { id: owned[appA]!.subscription }, "PATCH", `/subscriptions/${owned[appA]!.subscription}`));
    const [entry, ...more] = await auditOf("auditChange");
    expect(more).toEqual([]);
    expect(entry).toMatchObject({ actor: "key_w1", operation: "auditChange", method: "PATCH", path: `/subscriptions/${owned[appA]!.subscription}`, status: 200, resourceId: owned[appA]!.subscription, applicationId: appA });
    // The admin token's change: the owner is looked up after the handler.
    await change(request(admin, { id: owned[appB]!.subscription }));
    expect((await auditOf("auditChange"))[0]).toMatchObject({ actor: "bootstrap", resourceId: owned[appB]!.subscription, applicationId: appB });

    await wrap(route({ action: "write", audience: "operator" }, () => ({ status: 400, body: {} }), "auditFailed"))(request(admin));
    await wrap(route({ action: "write", audience: "operator" }, () => ({ status: 399 }), "audit399"))(request(admin));
    await wrap(route({ action: "read", audience: "operator" }, undefined, "auditRead"))(request(admin));
    // A write its rule leaves out of the log (a listener's pulls and heartbeats: docs/listen.md).
    await wrap(route({ action: "write", audience: "operator", audited: false }, () => ({ status: 200, body: {} }), "auditRepeated"))(request(admin));
    expect(await auditOf("auditRepeated")).toEqual([]);
    expect(await auditOf("auditFailed")).toEqual([]);
    expect((await auditOf("audit399")).map((e) => e.status)).toEqual([399]);
    expect(await auditOf("auditRead")).toEqual([]);
  });

  it("a creation's audit entry names what was created (id or eventId) and its application (from the answer, else the key's)", async () => {
    const respond = (body: unknown) => wrap(route({ action: "write", audience: "application" }, () => ({ status: 201, body }), "auditCreate"));
    await respond({ id: "sub_new", applicationId: appB })(request(admin));
    expect((await auditOf("auditCreate"))[0]).toMatchObject({ resourceId: "sub_new", applicationId: appB });
    await respond({ eventId: "evt_new" })(request(key(appA)));
    expect((await auditOf("auditCreate"))[0]).toMatchObject({ resourceId: "evt_new", applicationId: appA });
    await respond({ id: 5, eventId: "evt_2", applicationId: 7 })(request(admin));
    expect((await auditOf("auditCreate"))[0]).toMatchObject({ resourceId: "evt_2", applicationId: null });
    await respond({ id: 5, eventId: 6 })(request(key(null)));
    expect((await auditOf("auditCreate"))[0]).toMatchObject({ resourceId: null, applicationId: null });
    await respond("created")(request(admin));
    expect((await auditOf("auditCreate"))[0]).toMatchObject({ resourceId: null, applicationId: null });
    await respond(null)(request(admin));
    expect((await auditOf("auditCreate"))).toHaveLength(6);
    // A resource deleted by the change: its owner is no longer found, and the entry is still written.
    const gone = await createSubscription(db, { url: "https://example.com/g", eventTypes: ["t.*"], applicationId: appA });
    await wrap(route({ action: "write", audience: "application", resource: "subscription" }, () => ({ status: 204 }), "auditDelete"), {
      query: async (text: string, values?: unknown[]) => (text.includes("FROM outbound_subscriptions WHERE id") ? Promise.reject(new Error("gone")) : db.query(text, values)),
    } as Queryable)(request(admin, { id: gone.id }));
    expect((await auditOf("auditDelete"))[0]).toMatchObject({ resourceId: gone.id, applicationId: null });
  });

  it("wrapping twice checks and records once", async () => {
    const once = route({ action: "write", audience: "operator" }, undefined, "auditTwice");
    const twice = withAccessControl(withAccessControl([once], db), db);
    await twice[0]!.handler(request(admin));
    expect(await auditOf("auditTwice")).toHaveLength(1);
  });

  it("an audit write that fails is logged and the change still answered (it took effect)", async () => {
    const logged: Array<[unknown, string]> = [];
    const logger = { error: (obj: unknown, msg: string) => logged.push([obj, msg]) } as unknown as Logger;
    const failing: Queryable = { query: async (text, values) => (text.includes("management_audit_log") ? Promise.reject(new Error("disk full")) : db.query(text, values)) as never };
    const response = await wrap(route({ action: "write", audience: "operator" }, () => ({ status: 202, body: { ok: 1 } }), "auditBroken"), failing, logger)(request(key(null, "write", "key_l")));
    expect(response).toEqual({ status: 202, body: { ok: 1 } });
    expect(logged).toHaveLength(1);
    expect(logged[0]![1]).toBe("audit log write failed for a change that was made");
    expect(logged[0]![0]).toMatchObject({ operation: "auditBroken", actor: "key_l", err: { message: "disk full" } });
    // Without a logger it answers all the same.
    expect((await wrap(route({ action: "write", audience: "operator" }, () => ({ status: 202 }), "auditBroken2"), failing)(request(admin))).status).toBe(202);
  });
});
