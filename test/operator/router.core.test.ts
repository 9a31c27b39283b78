/**
 * The Node-free core (`createApp(...).handle`) and the node:http server in front of it give the
 * same answer to the same request: status, JSON body and the headers a caller acts on. The cloud
 * functions translate their events into `handle`; the local server streams into it. Also: what
 * the core alone decides (a base path, an empty token never matching).
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearerMatches, createApp, createHttpServer, HttpError, type AppOptions, type Route } from "../../shared/server/router.js";
import { startTestPlatform, TEST_TOKEN, type TestPlatform } from "./harness.js";
import { mapPlatformError } from "../../shared/platform.js";
import { openTestDatabase } from "../support/databases.js";
import type { Database } from "../../shared/db/port.js";

const TOKEN = "core-parity-token-0123456789";
const routes: Route[] = [
  { method: "GET", path: "/things/:id", auth: "admin", handler: async (req) => ({ status: 200, body: { id: req.params.id, q: req.query.get("q"), base: req.basePath } }) },
  { method: "POST", path: "/things", auth: "admin", handler: async (req) => ({ status: 201, body: { got: await req.json() } }) },
  { method: "POST", path: "/raw", auth: "none", handler: async (req) => ({ status: 202, body: { bytes: (await req.body()).length } }) },
  { method: "GET", path: "/boom", auth: "none", handler: async () => { throw new Error("secret detail at /srv/app.js:12"); } },
  { method: "GET", path: "/teapot", auth: "none", handler: async () => { throw new HttpError(418, "teapot", "I am a teapot.", { why: "test" }, { "x-extra": "1" }); } },
  { method: "GET", path: "/page", auth: "none", handler: async () => ({ status: 200, headers: { "content-type": "text/html; charset=utf-8" }, body: "<p>hi</p>" }) },
];
const options: AppOptions = { routes, adminToken: TOKEN, maxBodyBytes: 1024 };
const app = createApp(options);
let server: Server;
let base: string;

beforeAll(async () => {
  server = createHttpServer(options);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => { server.closeAllConnections(); await new Promise((r) => server.close(r)); });

interface Case { method: string; path: string; headers?: Record<string, string>; body?: string }
const auth = { authorization: `Bearer ${TOKEN}` };
const json = { ...auth, "content-type": "application/json" };
const CASES: Record<string, Case> = {
  "200 with params and query": { method: "GET", path: "/things/a%20b?q=1", headers: auth },
  "201 JSON body": { method: "POST", path: "/things", headers: json, body: JSON.stringify({ a: 1 }) },
  "401 without a token": { method: "GET", path: "/things/x" },
  "401 with a wrong token": { method: "GET", path: "/things/x", headers: { authorization: "Bearer nope" } },
  "404 no route": { method: "GET", path: "/nothing" },
  "405 with Allow": { method: "DELETE", path: "/things" },
  "415 not JSON": { method: "POST", path: "/things", headers: { ...auth, "content-type": "text/plain" }, body: "a=1" },
  "400 invalid JSON": { method: "POST", path: "/things", headers: json, body: "{nope" },
  "400 empty JSON body": { method: "POST", path: "/things", headers: json, body: "" },
  "413 over the limit": { method: "POST", path: "/raw", body: "a".repeat(2000) },
  "202 raw bytes at the limit": { method: "POST", path: "/raw", body: "a".repeat(1024) },
  "400 bad percent-encoding": { method: "GET", path: "/things/%E0%A4%A", headers: auth },
  "500 without the error's detail": { method: "GET", path: "/boom" },
  "an HttpError's status, details and headers": { method: "GET", path: "/teapot" },
  "a string body with its own content type": { method: "GET", path: "/page" },
};

const KEPT_HEADERS = ["allow", "www-authenticate", "content-type", "x-extra"];
const pick = (headers: Record<string, string | undefined>) =>
  Object.fromEntries(KEPT_HEADERS.filter((h) => headers[h] !== undefined).map((h) => [h, headers[h]]));

describe("the core and the node:http server answer alike", () => {
  for (const [name, c] of Object.entries(CASES)) {
    it(name, async () => {
      const overHttp = await fetch(base + c.path, { method: c.method, headers: c.headers, body: c.body });
      const httpAnswer = { status: overHttp.status, headers: pick(Object.fromEntries(overHttp.headers)), body: await overHttp.text() };
      const r = await app.handle({ method: c.method, url: c.path, headers: Object.fromEntries(Object.entries(c.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])), body: c.body === undefined ? undefined : Buffer.from(c.body) });
      const coreBody = r.body === undefined ? "" : typeof r.body === "string" ? r.body : JSON.stringify(r.body);
      expect({ status: r.status, headers: pick({ ...(typeof r.body === "object" ? { "content-type": "application/json; charset=utf-8" } : {}), ...r.headers }), body: coreBody }).toEqual(httpAnswer);
      expect(httpAnswer.body).not.toMatch(/secret detail|\.js:\d+/);
    });
  }
});

describe("the core alone", () => {
  it("routes under a base path, hands it to the route, and answers 404 outside it", async () => {
    const ok = await app.handle({ method: "GET", url: "/api/things/x", headers: auth, basePath: "/api/" });
    expect(ok).toMatchObject({ status: 200, body: { id: "x", base: "/api" } });
    const outside = await app.handle({ method: "GET", url: "/things/x", headers: auth, basePath: "api" });
    expect(outside.status).toBe(404);
    expect((outside.body as { error: { code: string } }).error.code).toBe("not_found");
  });

  it("an empty token matches nothing, not even an empty bearer", () => {
    expect(bearerMatches(undefined, "")).toBe(false);
    expect(bearerMatches("Bearer ", "")).toBe(false);
    expect(bearerMatches("", "")).toBe(false);
    expect(bearerMatches(`Bearer ${TOKEN}`, TOKEN)).toBe(true);
  });
});

describe("the management routes through the core and through the local server", () => {
  let t: TestPlatform;
  let db: { db: Database; close(): Promise<void> };
  beforeAll(async () => {
    db = await openTestDatabase("pglite");
    t = await startTestPlatform(db.db, {}, { workers: false });
  }, 120_000);
  afterAll(async () => { await t?.stop(); await db?.close(); });

  const bearer = { authorization: `Bearer ${TEST_TOKEN}` };
  const REQUESTS: Record<string, Case> = {
    "the OpenAPI document": { method: "GET", path: "/openapi.json" },
    "an empty list": { method: "GET", path: "/dead-letters", headers: bearer },
    "an invalid subscription": { method: "POST", path: "/subscriptions", headers: { ...bearer, "content-type": "application/json" }, body: JSON.stringify({ url: "nope", eventTypes: [] }) },
    "an unknown query parameter": { method: "GET", path: "/deliveries?colour=red", headers: bearer },
    "a missing delivery": { method: "GET", path: "/deliveries/does-not-exist", headers: bearer },
    "a wrong method": { method: "PUT", path: "/subscriptions", headers: bearer },
    "no token": { method: "GET", path: "/subscriptions" },
    "not JSON": { method: "POST", path: "/events", headers: { ...bearer, "content-type": "text/plain" }, body: "x" },
  };
  for (const [name, c] of Object.entries(REQUESTS)) {
    it(name, async () => {
      const app = createApp({ routes: t.platform.routes, adminToken: TEST_TOKEN, authenticate: t.platform.authenticate, maxBodyBytes: t.config.MAX_PAYLOAD_BYTES, mapError: mapPlatformError });
      const overHttp = await fetch(t.baseUrl + c.path, { method: c.method, headers: c.headers, body: c.body });
      const r = await app.handle({ method: c.method, url: c.path, headers: c.headers ?? {}, body: c.body === undefined ? undefined : Buffer.from(c.body) });
      expect(r.status).toBe(overHttp.status);
      expect(r.body).toEqual(await overHttp.json());
      expect(r.headers?.allow).toBe(overHttp.headers.get("allow") ?? undefined);
    });
  }
});
