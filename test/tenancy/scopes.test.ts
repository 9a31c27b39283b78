/**
 * Must show 1 of issue 17, generated from `/openapi.json`: for EVERY operation the document lists,
 * - it declares who may call it (`x-access`), or the test fails (a new route cannot forget; the
 *   platform refuses to start with one, too);
 * - an application key cannot read or change another application's resources: 404 for a
 *   resource of another application (its existence is not leaked), 403 for an operator-only
 *   operation, and lists and creations never reach the other application;
 * - a read-only key (operator or application) cannot change anything: 403.
 * The other application's state is compared before and after the walk. Both backends.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { scanForAlerts } from "../../shared/alerts.js";
import { openApiDocument } from "../../shared/server/openapi.js";
import { UndeclaredAccessError, withAccessControl } from "../../shared/tenancy/access.js";
import type { Route } from "../../shared/server/router.js";
import { describeEachBackend } from "../support/databases.js";
import { authenticatedOperations, type Operation } from "../support/openapiWalk.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";

type Json = Record<string, any>;
interface Tenant { app: string; key: string; readKey: string; sub: string; event: string; dead: string; delivered: string }

/**
 * Bodies that try to reach application `other` through an operation that names no resource in its
 * path (creations, bulk operations). Every such operation needs one here: a new one fails the test
 * until its cross-application case is written.
 */
function crossBodies(other: Tenant): Record<string, unknown> {
  return {
    createSubscription: { url: "https://example.com/x", eventTypes: ["scope.*"], applicationId: other.app },
    sendEvent: { type: "scope.x", data: 1, applicationId: other.app },
    sendEvents: { events: [{ type: "scope.x", data: 1, applicationId: other.app }] },
    replayDeadLetters: { ids: [other.dead] },
    // The catalogue: a creation or import naming the other application is refused like any other.
    createEventType: { name: "scope.x", applicationId: other.app },
    importEventTypes: { document: { openapi: "3.1.0", info: { title: "scope", version: "1" }, webhooks: {} }, applicationId: other.app },
    testTransformation: { transformation: "(event) => null", eventType: "scope.x", applicationId: other.app },
  };
}

describeEachBackend("scopes, walked from /openapi.json", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  let document: Json;
  let a: Tenant;
  let b: Tenant;
  let operatorRead: string;

  async function tenant(name: string): Promise<Tenant> {
    const app = (await t.api("POST", "/applications", { name })).id as string;
    const sub = (await t.api("POST", "/subscriptions", { url: `${receiver.url}/${name}`, eventTypes: [`${name}.*`], maxAttempts: 1, applicationId: app })).id as string;
    const ok = await t.api("POST", "/events", { id: `${name}-ok`, type: `${name}.ok`, data: {}, applicationId: app });
    const bad = await t.api("POST", "/events", { id: `${name}-bad`, type: `${name}.bad`, data: {}, applicationId: app });
    const dead: string = bad.deliveries[0].id;
    await eventually(`${dead} dead`, async () => (await t.api("GET", `/deliveries/${encodeURIComponent(dead)}`)).status === "dead");
    const key = (await t.api("POST", "/keys", { applicationId: app })).key as string;
    const readKey = (await t.api("POST", "/keys", { applicationId: app, access: "read" })).key as string;
    return { app, key, readKey, sub, event: ok.eventId, dead, delivered: ok.deliveries[0].id };
  }

  beforeAll(async () => {
    receiver = await startTestReceiver();
    receiver.answer = ({ id }) => (id.includes("-bad:") ? 400 : 200);
    t = await startTestPlatform(ctx.db);
    a = await tenant("alpha");
    b = await tenant("beta");
    // Each dead letter's alert copy for its own application, raised now rather than by the poller mid-walk.
    await scanForAlerts(ctx.db);
    operatorRead = (await t.api("POST", "/keys", { access: "read" })).key;
    document = await (await fetch(`${t.baseUrl}/openapi.json`)).json();
  }, 180_000);
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  function resourceOf(kind: string, tenant: Tenant): string {
    const ids: Record<string, string> = { application: tenant.app, subscription: tenant.sub, event: tenant.event, delivery: tenant.dead, deadLetter: tenant.dead };
    if (!(kind in ids)) throw new Error(`scopes.test.ts knows no resource kind ${kind}: add it to resourceOf`);
    return ids[kind]!;
  }

  /** The operation's path with its resource parameter set to `tenant`'s resource of that kind. */
  function pathFor(o: Operation, tenant: Tenant): string {
    const access = o.op["x-access"] as { resource?: string; param?: string };
    return o.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(name === (access.param ?? "id") && access.resource ? resourceOf(access.resource, tenant) : "x"));
  }

  async function call(token: string, method: string, path: string, body?: unknown) {
    const res = await fetch(t.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  }

  /** What an operator sees of application `x`: compared before and after the walk. */
  async function stateOf(x: Tenant) {
    const q = `applicationId=${x.app}&limit=1000`;
    return {
      subscriptions: (await t.api("GET", `/subscriptions?${q}`)).subscriptions,
      events: (await t.api("GET", `/events?${q}`)).events,
      deliveries: (await t.api("GET", `/deliveries?${q}`)).deliveries.map(({ updatedAt: _u, leased: _l, ...d }: Json) => d),
      deadLetters: (await t.api("GET", `/dead-letters?${q}`)).deadLetters.map((d: Json) => d.id),
      application: await t.api("GET", `/applications/${x.app}`),
    };
  }

  it("every authenticated operation declares its access in the document", () => {
    const { operations, undeclared } = authenticatedOperations(document);
    expect(operations.length).toBeGreaterThan(30);
    expect(undeclared, "operations without x-access (declare `access` in their OperationDoc)").toEqual([]);
  });

  it("a route added without a declared access stops the platform at startup, is caught by the walk, and (if allowed) is refused to every scoped key", async () => {
    const bare: Route = { method: "POST", path: "/new-thing/:id", auth: "admin", doc: { operationId: "newThing", tag: "X", summary: "x", responses: { 200: { description: "ok" } } }, handler: async () => ({ status: 200, body: {} }) };
    expect(() => withAccessControl([bare], ctx.db)).toThrow(UndeclaredAccessError);
    expect(() => withAccessControl([bare], ctx.db)).toThrow(/POST \/new-thing\/:id.*Add `access:/);
    const { undeclared } = authenticatedOperations(openApiDocument([bare], { version: "0" }));
    expect(undeclared).toEqual(["newThing"]);
    const [guarded] = withAccessControl([bare], ctx.db, undefined, { allowUndeclared: true });
    const req = (principal: unknown) => ({ principal, method: "POST", path: "/new-thing/1", params: { id: "1" }, query: new URLSearchParams(), headers: {}, body: async () => Buffer.alloc(0), json: async () => ({}) }) as never;
    await expect(guarded!.handler(req({ kind: "key", keyId: "key_x", applicationId: "app_x", access: "write" }))).rejects.toMatchObject({ status: 403 });
    await expect(guarded!.handler(req({ kind: "key", keyId: "key_x", applicationId: null, access: "read" }))).rejects.toMatchObject({ status: 403 });
    expect((await guarded!.handler(req({ kind: "admin" }))).status).toBe(200);
  });

  it("an application key never reads or changes another application's resources, on any operation", async () => {
    const before = await stateOf(b);
    const { operations } = authenticatedOperations(document);
    expect((await call(t.token, "POST", "/event-types", { name: "scope.x", applicationId: b.app })).status).toBe(201);
    const bodies = crossBodies(b);
    const secretsOfB = [b.app, b.sub, b.event, b.dead, b.delivered];
    for (const o of operations) {
      const id = o.op.operationId as string;
      const access = o.op["x-access"] as { action: string; audience: string; resource?: string };
      const what = `${o.method} ${o.path} (${id})`;
      if (access.audience === "operator") {
        const r = await call(a.key, o.method, pathFor(o, b), o.method === "GET" ? undefined : {});
        expect(r.status, `${what}: operator-only, for an application key`).toBe(403);
        continue;
      }
      if (o.path.startsWith("/event-types/{name}")) {
        // A catalogue entry is named within its application: the other application's is not found.
        const body = o.method === "GET" ? undefined : o.method === "PATCH" ? { description: "taken over" } : {};
        const r = await call(a.key, o.method, `/event-types/scope.x?applicationId=${b.app}`, body);
        expect(r.status, `${what} on the other application's event type: ${r.text.slice(0, 200)}`).toBe(404);
        continue;
      }
      if (access.resource) {
        // Another application's resource: answered exactly as an id that does not exist.
        const body = o.method === "GET" ? undefined : {};
        const ofB = resourceOf(access.resource, b);
        const r = await call(a.key, o.method, pathFor(o, b), body);
        expect(r.status, `${what} on the other application's ${access.resource}: ${r.text.slice(0, 200)}`).toBe(404);
        const missing = pathFor(o, b).replace(encodeURIComponent(ofB), "missing_id");
        const asMissing = await call(a.key, o.method, missing, body);
        expect(r.text.replaceAll(ofB, "<id>"), `${what}: the other application's ${access.resource} is told apart from a missing one`).toBe(asMissing.text.replaceAll("missing_id", "<id>"));
        // …and as the operator is told of a missing one (the same noun, the same shape).
        if (o.method === "GET") expect(asMissing.text, what).toBe((await call(t.token, o.method, missing)).text);
        for (const s of secretsOfB.filter((x) => !ofB.includes(x))) expect(r.text, what).not.toContain(s);
        continue;
      }
      if (o.path === "/portal/session") {
        // The portal's own session (docs/portal.md): an API key has none, so there is nothing of
        // another application to reach; sessions' scopes are walked in test/portal/.
        const r = await call(a.key, o.method, o.path, o.method === "GET" ? undefined : {});
        expect(JSON.parse(r.text).error.code, what).toBe("no_portal_session");
        continue;
      }
      if (o.method === "GET") {
        // A list: only the key's own application, and naming the other one is a 404.
        const r = await call(a.key, "GET", o.path);
        expect(r.status, what).toBe(200);
        for (const s of secretsOfB) expect(r.text, `${what} shows ${s}`).not.toContain(s);
        const named = (o.op.parameters as Json[] | undefined)?.some((p) => p.name === "applicationId");
        if (named) expect((await call(a.key, "GET", `${o.path}?applicationId=${b.app}`)).status, `${what}?applicationId=<other>`).toBe(404);
        continue;
      }
      if (o.path === "/catalogue-settings") {
        // The application is named in the query here.
        const r = await call(a.key, o.method, `${o.path}?applicationId=${b.app}`, { strict: true });
        expect(r.status, `${what} for the other application: ${r.text.slice(0, 200)}`).toBe(404);
        continue;
      }
      // A creation or bulk change naming the other application.
      expect(bodies, `a cross-application body for ${what} in crossBodies()`).toHaveProperty(id);
      const r = await call(a.key, o.method, o.path, bodies[id]);
      if (r.status === 200) expect(JSON.parse(r.text).replayed, what).toEqual([]); // ids of another application are skipped
      else expect(r.status, `${what}: ${r.text.slice(0, 200)}`).toBe(404);
    }
    expect(await stateOf(b)).toEqual(before);
    // …while its own resources answer it (the scope is not a blanket refusal).
    expect((await call(a.key, "GET", `/subscriptions/${a.sub}`)).status).toBe(200);
    expect((await call(a.key, "GET", `/dead-letters/${encodeURIComponent(a.dead)}`)).status).toBe(200);
    expect(JSON.parse((await call(a.key, "GET", "/deliveries")).text).deliveries.map((d: Json) => d.id).sort()).toEqual([a.dead, a.delivered].sort());
  });

  it("a read-only key, operator or application, changes nothing: 403 on every write operation", async () => {
    const before = [await stateOf(a), await stateOf(b)];
    const { operations } = authenticatedOperations(document);
    const writes = operations.filter((o) => (o.op["x-access"] as { action: string }).action === "write");
    expect(writes.length).toBeGreaterThan(15);
    for (const o of writes) {
      const what = `${o.method} ${o.path} (${o.op.operationId})`;
      // Its own application's resources: a 403 here is the scope, not a missing resource.
      for (const [who, token] of [["operator read-only", operatorRead], ["application read-only", a.readKey]] as const) {
        // A write may be a GET (reading a secret is one: GET /subscriptions/{id}/secrets); a GET carries no body.
        const r = await call(token, o.method, pathFor(o, a), o.method === "GET" ? undefined : crossBodies(a)[o.op.operationId] ?? {});
        expect(r.status, `${what} with the ${who} key: ${r.text.slice(0, 200)}`).toBe(403);
        expect(JSON.parse(r.text).error.code, what).toBe("read_only");
      }
    }
    // Reads still work for both.
    expect((await call(operatorRead, "GET", "/inbox")).status).toBe(200);
    expect((await call(a.readKey, "GET", `/subscriptions/${a.sub}`)).status).toBe(200);
    expect([await stateOf(a), await stateOf(b)]).toEqual(before);
  });

  it("every change is in the audit log with who made it; a revoked key is refused at once", async () => {
    const created = await call(a.key, "POST", "/subscriptions", { url: "https://example.com/audit", eventTypes: ["alpha.*"] });
    expect(created.status).toBe(201);
    const sub = JSON.parse(created.text);
    expect(sub.applicationId).toBe(a.app);
    const keyId = `key_${a.key.slice(4, 20)}`;
    const { entries } = await t.api("GET", `/audit-log?actor=${keyId}&operation=createSubscription`);
    expect(entries[0]).toMatchObject({ actor: keyId, operation: "createSubscription", method: "POST", path: "/subscriptions", resourceId: sub.id, applicationId: a.app, status: 201 });
    const bootstrap = await t.api("GET", "/audit-log?actor=bootstrap&operation=createApplication");
    expect(bootstrap.entries.map((e: Json) => e.resourceId)).toEqual(expect.arrayContaining([a.app, b.app]));
    // Deliveries made on request say who asked, too.
    expect((await call(a.key, "POST", `/events/${a.event}/resend`, {})).status).toBe(201);
    const resent = (await t.api("GET", `/events/${a.event}`)).deliveries.find((d: Json) => d.origin === "resend");
    expect(resent.requestedBy).toBe(keyId);
    // Reads are not audited.
    expect((await t.api("GET", `/audit-log?actor=${keyId}&operation=getSubscription`)).entries).toEqual([]);

    const extra = await t.api("POST", "/keys", { applicationId: a.app });
    expect((await call(extra.key, "GET", "/subscriptions")).status).toBe(200);
    await t.api("DELETE", `/keys/${extra.id}`);
    expect((await call(extra.key, "GET", "/subscriptions")).status).toBe(401);
    const revoked = await t.api("GET", `/audit-log?operation=revokeApiKey&resourceId=${extra.id}`);
    expect(revoked.entries).toHaveLength(1);
  });
});
