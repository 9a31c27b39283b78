/**
 * Issue 26, Must show 3: a path parameter or query filter PostgreSQL cannot take (a NUL
 * character) or that is not UTF-8 is answered 400 naming the parameter, never 500, on every
 * operation of `/openapi.json` and with each kind of principal: ADMIN_TOKEN, operator keys (write
 * and read-only), application keys (write and read-only), and none on the public routes. It is
 * checked before any lookup: an application key used to get a 500 from the ownership query.
 * Both backends.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachBackend } from "../support/databases.js";
import { startTestPlatform, type TestPlatform } from "../operator/harness.js";

type Json = Record<string, any>;

/** Bytes a parameter may not carry, percent-encoded as a client would send them. */
const BAD = [
  { what: "a NUL character", encoded: "x%00" },
  { what: "invalid UTF-8 (a lone continuation byte)", encoded: "x%80" },
  { what: "invalid UTF-8 (0xFF)", encoded: "%FFx" },
  { what: "invalid UTF-8 (a UTF-16 surrogate encoded)", encoded: "%ED%A0%80" },
];

describeEachBackend("path and query parameters checked before SQL", (ctx) => {
  let t: TestPlatform;
  let document: Json;
  const principals: Record<string, string | undefined> = {};

  beforeAll(async () => {
    t = await startTestPlatform(ctx.db);
    const app = (await t.api("POST", "/applications", { name: "params" })).id;
    principals["ADMIN_TOKEN"] = t.token;
    principals["operator write key"] = (await t.api("POST", "/keys", {})).key;
    principals["operator read-only key"] = (await t.api("POST", "/keys", { access: "read" })).key;
    principals["application write key"] = (await t.api("POST", "/keys", { applicationId: app })).key;
    principals["application read-only key"] = (await t.api("POST", "/keys", { applicationId: app, access: "read" })).key;
    principals["app_default write key"] = (await t.api("POST", "/keys", { applicationId: "app_default" })).key;
    document = await (await fetch(`${t.baseUrl}/openapi.json`)).json();
  }, 180_000);
  afterAll(async () => { await t?.stop(); });

  async function send(token: string | undefined, method: string, path: string) {
    const res = await fetch(t.baseUrl + path, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(method === "GET" ? {} : { "content-type": "application/json" }) },
      body: method === "GET" ? undefined : "{}",
    });
    const text = await res.text();
    return { status: res.status, text, error: (text ? JSON.parse(text) : {}).error as { code: string; message: string; details?: Json } | undefined };
  }

  it("answers 400 naming the parameter on every operation, for every principal", async () => {
    const operations = Object.entries(document.paths as Json).flatMap(([path, ops]) =>
      Object.entries(ops as Json).map(([method, op]) => ({ method: method.toUpperCase(), path, op: op as Json })));
    let checked = 0;
    let pathParams = 0;
    let queryParams = 0;
    for (const o of operations) {
      const isPublic = (o.op.security as unknown[] | undefined)?.length === 0;
      const who = isPublic ? { "no token": undefined, ...principals } : principals;
      const params = (o.op.parameters as Json[] | undefined) ?? [];
      const inPath = params.filter((p) => p.in === "path").map((p) => p.name as string);
      const inQuery = params.filter((p) => p.in === "query").map((p) => p.name as string);
      pathParams += inPath.length;
      queryParams += inQuery.length;
      const good = (name: string) => (name === "id" ? "some_id" : "x");
      for (const [principal, token] of Object.entries(who)) {
        for (const bad of BAD) {
          for (const name of inPath) {
            const path = o.path.replace(/\{(\w+)\}/g, (_m, n: string) => (n === name ? bad.encoded : good(n)));
            const r = await send(token, o.method, path);
            const what = `${o.method} ${path} (${o.op.operationId}), path parameter ${name} with ${bad.what}, ${principal}`;
            expect(r.status, `${what}: ${r.text.slice(0, 300)}`).toBe(400);
            expect(r.error?.message, what).toContain(name);
            expect(r.error?.details, what).toMatchObject({ parameter: name, in: "path" });
            checked++;
          }
          for (const name of inQuery) {
            const path = `${o.path.replace(/\{(\w+)\}/g, (_m, n: string) => good(n))}?${name}=${bad.encoded}`;
            const r = await send(token, o.method, path);
            const what = `${o.method} ${path} (${o.op.operationId}), query parameter ${name} with ${bad.what}, ${principal}`;
            expect(r.status, `${what}: ${r.text.slice(0, 300)}`).toBe(400);
            expect(r.error?.message, what).toContain(name);
            expect(r.error?.details, what).toMatchObject({ parameter: name, in: "query" });
            checked++;
          }
        }
      }
    }
    // The walk really covered the kinds of parameter the API has.
    expect(pathParams).toBeGreaterThan(20);
    expect(queryParams).toBeGreaterThan(20);
    expect(checked).toBeGreaterThan(1000);
  }, 300_000);

  it("a parameter the document does not list is refused the same way, and so is its name", async () => {
    for (const token of Object.values(principals)) {
      const value = await send(token, "GET", "/subscriptions?unknown=x%00");
      expect(value.status, value.text).toBe(400);
      expect(value.error!.details).toMatchObject({ parameter: "unknown", in: "query" });
      const name = await send(token, "GET", "/subscriptions?a%00b=1");
      expect(name.status, name.text).toBe(400);
      expect(name.error!.message).toMatch(/query parameter name/);
    }
  });

  it("good values still pass: a NUL-free id that does not exist is a 404, UTF-8 text is a filter", async () => {
    const key = principals["application write key"];
    expect((await send(key, "GET", "/subscriptions/sub_%C3%A9t%C3%A9")).status).toBe(404);
    expect((await send(key, "GET", "/events?eventType=caf%C3%A9.x")).status).toBe(200);
    expect((await send(key, "GET", "/events?eventType=a+b")).status).not.toBe(500);
  });
});
