/**
 * The customer portal's links and sessions at the API (issue 32 items 1–3, docs/portal.md), both
 * backends: a link opens one session, once, for its application only, until its expiry; the
 * session is an application key with a cookie, whose changes need the CSRF token and the portal's
 * own origin; links and sessions are revoked at once; everything is in the audit log; the page's
 * frame-ancestors follow the allow-lists; an attempt records what it sent, secrets redacted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../shared/config.js";
import { describeEachBackend } from "../support/databases.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";

type Json = Record<string, any>;

describeEachBackend("portal links and sessions", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  let app: string;
  let other: string;
  let otherSub: string;

  beforeAll(async () => {
    receiver = await startTestReceiver();
    t = await startTestPlatform(ctx.db, { PORTAL_FRAME_ANCESTORS: "https://everyone.example" });
    app = (await t.api("POST", "/applications", { name: "Acme" })).id;
    other = (await t.api("POST", "/applications", { name: "Globex" })).id;
    otherSub = (await t.api("POST", "/subscriptions", { url: `${receiver.url}/globex`, eventTypes: ["*"], applicationId: other })).id;
  }, 180_000);
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  const host = () => new URL(t.baseUrl).host;
  async function call(method: string, path: string, options: { cookie?: string; csrf?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const res = await fetch(t.baseUrl + path, {
      method,
      headers: {
        ...(options.cookie ? { cookie: options.cookie } : {}),
        ...(options.csrf ? { "x-csrf-token": options.csrf } : {}),
        ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
        ...options.headers,
      },
      body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
      redirect: "manual",
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text && res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text) as Json };
  }
  async function link(body: Json = {}, application = app): Promise<Json> {
    return t.api("POST", `/applications/${application}/portal-links`, body);
  }
  /** Exchanges a link as the portal page does: same origin, JSON. */
  async function open(token: string, headers: Record<string, string> = {}) {
    return call("POST", "/portal/sessions", { body: { token }, headers: { origin: t.baseUrl, "sec-fetch-site": "same-origin", ...headers } });
  }
  async function session(body: Json = { access: "write" }): Promise<{ cookie: string; csrf: string; id: string; linkId: string }> {
    const made = await link(body);
    const opened = await open(made.token);
    expect(opened.status).toBe(201);
    const cookie = opened.headers.get("set-cookie")!.split(";")[0]!;
    return { cookie, csrf: opened.body.csrfToken, id: opened.body.sessionId, linkId: made.id };
  }
  const audit = async (filter: string): Promise<Json[]> => (await t.api("GET", `/audit-log?${filter}`)).entries;

  it("makes a link whose token is shown once, in a URL's fragment, and lists it without it", async () => {
    const made = await link({ access: "read", expiresInMinutes: 30, returnUrl: "https://acme.example/settings" });
    expect(made).toMatchObject({ applicationId: app, access: "read", returnUrl: "https://acme.example/settings", usedAt: null, session: null, createdBy: "bootstrap" });
    expect(made.token).toMatch(/^whpl_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(made.url).toBe(`${t.baseUrl}/portal?application=${app}#link=${made.token}`);
    const minutes = (Date.parse(made.expiresAt) - Date.now()) / 60_000;
    expect(minutes).toBeGreaterThan(29);
    expect(minutes).toBeLessThanOrEqual(30);
    const listed = (await t.api("GET", `/applications/${app}/portal-links`)).links as Json[];
    const row = listed.find((l) => l.id === made.id)!;
    expect(row).toBeDefined();
    expect(row.token).toBeUndefined();
    expect(JSON.stringify(listed)).not.toContain(made.token.slice("whpl_0123456789abcdef_".length));
    // Stored as a digest only.
    const stored = await ctx.db.query<{ token_sha256: Uint8Array }>("SELECT token_sha256 FROM portal_links WHERE id = $1", [made.id]);
    expect(Buffer.from(stored.rows[0]!.token_sha256).toString("utf8")).not.toContain(made.token);
    expect((await t.api("GET", `/applications/${other}/portal-links`)).links.map((l: Json) => l.id)).not.toContain(made.id);
  });

  it("refuses a bad link request precisely", async () => {
    for (const [body, message] of [
      [{ access: "admin" }, "access"],
      [{ expiresInMinutes: 0 }, "at least 1 minute"],
      [{ expiresInMinutes: 1441 }, "at most 1440 minutes"],
      [{ returnUrl: "javascript:alert(1)" }, "absolute http(s) URL"],
      [{ nope: 1 }, "nope"],
    ] as const) {
      const res = await call("POST", `/applications/${app}/portal-links`, { body, headers: { authorization: `Bearer ${t.token}` } });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message).toContain(message);
    }
    const platform = await call("POST", "/applications/app_platform/portal-links", { body: {}, headers: { authorization: `Bearer ${t.token}` } });
    expect(platform.status).toBe(400);
    expect((await call("POST", "/applications/app_nope/portal-links", { body: {}, headers: { authorization: `Bearer ${t.token}` } })).status).toBe(404);
  });

  it("opens one session with an HttpOnly cookie; the same link again opens nothing", async () => {
    const made = await link({ access: "write" });
    const first = await open(made.token);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ applicationId: app, applicationName: "Acme", access: "write", expiresAt: made.expiresAt });
    const cookie = first.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^whp_session=whps_[0-9a-f]{16}_[A-Za-z0-9_-]{43}; Path=\/; Expires=/);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(cookie).not.toContain("Secure");
    const again = await open(made.token);
    expect(again.status).toBe(403);
    expect(again.body.error).toMatchObject({ code: "link_refused", details: { reason: "used" } });
    expect(again.headers.get("set-cookie")).toBeNull();
    expect((await open(`${made.token.slice(0, -1)}x`)).body.error.details.reason).toBe("invalid");
    expect((await open("whpl_0123456789abcdef_" + "a".repeat(43))).body.error.details.reason).toBe("invalid");
    expect((await call("POST", "/portal/sessions", { body: { nope: 1 } })).status).toBe(400);
  });

  it("sets a Secure, SameSite=None, Partitioned cookie over https (framing by another site)", async () => {
    const made = await link();
    const res = await open(made.token, { "x-forwarded-proto": "https" });
    expect(res.status).toBe(201);
    expect(res.headers.get("set-cookie")).toMatch(/HttpOnly; Secure; SameSite=None; Partitioned$/);
  });

  it("refuses an expired link, and ends a session at its expiry", async () => {
    const made = await link({ expiresInMinutes: 1 });
    await ctx.db.query("UPDATE portal_links SET expires_at = now() - interval '1 second' WHERE id = $1", [made.id]);
    const res = await open(made.token);
    expect(res.status).toBe(403);
    expect(res.body.error.details.reason).toBe("expired");
    expect(res.body.error.message).toContain("expired");

    const s = await session();
    expect((await call("GET", "/portal/session", { cookie: s.cookie })).status).toBe(200);
    await ctx.db.query("UPDATE portal_sessions SET expires_at = now() - interval '1 second' WHERE id = $1", [s.id]);
    expect((await call("GET", "/portal/session", { cookie: s.cookie })).status).toBe(401);
  });

  it("refuses an exchange another site starts (login CSRF)", async () => {
    const made = await link();
    expect((await open(made.token, { origin: "https://evil.example" })).body.error.code).toBe("csrf_failed");
    expect((await open(made.token, { "sec-fetch-site": "cross-site" })).body.error.code).toBe("csrf_failed");
    // Still unused: the page's own exchange works.
    expect((await open(made.token)).status).toBe(201);
  });

  it("acts for its application only, as an application key", async () => {
    const s = await session();
    const me = await call("GET", "/portal/session", { cookie: s.cookie });
    expect(me.body).toMatchObject({ sessionId: s.id, applicationId: app, access: "write", csrfToken: s.csrf });
    const created = await call("POST", "/subscriptions", { cookie: s.cookie, csrf: s.csrf, headers: { origin: t.baseUrl }, body: { url: `${receiver.url}/acme`, eventTypes: ["*"] } });
    expect(created.status).toBe(201);
    expect(created.body.applicationId).toBe(app);
    const mine = await call("GET", "/subscriptions", { cookie: s.cookie });
    expect(mine.body.subscriptions.map((x: Json) => x.applicationId)).toEqual(mine.body.subscriptions.map(() => app));
    expect(mine.body.subscriptions.map((x: Json) => x.id)).toContain(created.body.id);
    // Another application's resource is not found; an operator operation is forbidden.
    expect((await call("GET", `/subscriptions/${otherSub}`, { cookie: s.cookie })).status).toBe(404);
    expect((await call("POST", "/subscriptions", { cookie: s.cookie, csrf: s.csrf, body: { url: `${receiver.url}/x`, eventTypes: ["*"], applicationId: other } })).status).toBe(404);
    expect((await call("GET", "/applications", { cookie: s.cookie })).status).toBe(403);
    expect((await call("POST", `/applications/${app}/portal-links`, { cookie: s.cookie, csrf: s.csrf, body: {} })).status).toBe(403);
    // A bearer token wins over the cookie: the operator stays the operator.
    const both = await call("GET", "/applications", { cookie: s.cookie, headers: { authorization: `Bearer ${t.token}` } });
    expect(both.status).toBe(200);
  });

  it("a read-only session changes nothing and sees no secret", async () => {
    const s = await session({ access: "read" });
    const sub = (await t.api("POST", "/subscriptions", { url: `${receiver.url}/ro`, eventTypes: ["*"], applicationId: app })).id;
    expect((await call("GET", `/subscriptions/${sub}`, { cookie: s.cookie })).status).toBe(200);
    const change = await call("POST", `/subscriptions/${sub}/pause`, { cookie: s.cookie, csrf: s.csrf });
    expect(change.status).toBe(403);
    expect(change.body.error.code).toBe("read_only");
    expect((await call("GET", `/subscriptions/${sub}/secrets`, { cookie: s.cookie })).body.error.code).toBe("read_only");
    // Signing out is allowed to it.
    expect((await call("DELETE", "/portal/session", { cookie: s.cookie, csrf: s.csrf })).status).toBe(200);
    expect((await call("GET", "/portal/session", { cookie: s.cookie })).status).toBe(401);
  });

  it("refuses a change without the CSRF token, with a wrong one, or from another origin", async () => {
    const s = await session();
    const body = { url: `${receiver.url}/csrf`, eventTypes: ["*"] };
    const cases: [string, { csrf?: string; headers?: Record<string, string> }][] = [
      ["no token", {}],
      ["a wrong token", { csrf: `${s.csrf.slice(0, -2)}xx` }],
      ["another session's token", { csrf: (await session()).csrf }],
      ["another origin", { csrf: s.csrf, headers: { origin: "https://evil.example" } }],
      ["another site", { csrf: s.csrf, headers: { "sec-fetch-site": "cross-site" } }],
      ["a sibling of this site", { csrf: s.csrf, headers: { "sec-fetch-site": "same-site" } }],
    ];
    const before = (await t.api("GET", `/subscriptions?applicationId=${app}`)).subscriptions.length;
    for (const [what, options] of cases) {
      const res = await call("POST", "/subscriptions", { cookie: s.cookie, body, ...options });
      expect(res.status, what).toBe(403);
      expect(res.body.error.code, what).toBe("csrf_failed");
    }
    // DELETE and PATCH too, not only POST.
    const sub = (await t.api("POST", "/subscriptions", { ...body, applicationId: app })).id;
    expect((await call("DELETE", `/subscriptions/${sub}`, { cookie: s.cookie })).body.error.code).toBe("csrf_failed");
    expect((await call("PATCH", `/subscriptions/${sub}`, { cookie: s.cookie, body: { description: "x" } })).body.error.code).toBe("csrf_failed");
    expect((await t.api("GET", `/subscriptions?applicationId=${app}`)).subscriptions.length).toBe(before + 1);
    // The portal's own request passes.
    const ok = await call("POST", "/subscriptions", { cookie: s.cookie, csrf: s.csrf, body, headers: { origin: t.baseUrl, "sec-fetch-site": "same-origin" } });
    expect(ok.status).toBe(201);
    expect(host()).toBe(new URL(t.baseUrl).host);
  });

  it("revokes a link (its session ends at once), an unused link, and a session by its id", async () => {
    const s = await session();
    expect((await call("GET", "/subscriptions", { cookie: s.cookie })).status).toBe(200);
    const revoked = await t.api("DELETE", `/portal-links/${s.linkId}`);
    expect(revoked.revokedBy).toBe("bootstrap");
    expect(revoked.session).toMatchObject({ id: s.id, revokedBy: "bootstrap" });
    expect((await call("GET", "/subscriptions", { cookie: s.cookie })).status).toBe(401);

    const unused = await link();
    await t.api("DELETE", `/portal-links/${unused.id}`);
    expect((await open(unused.token)).body.error.details.reason).toBe("revoked");

    const s2 = await session();
    const ended = await t.api("DELETE", `/portal-sessions/${s2.id}`);
    expect(ended).toMatchObject({ id: s2.id, applicationId: app, revokedBy: "bootstrap" });
    expect((await call("GET", "/portal/session", { cookie: s2.cookie })).status).toBe(401);
    expect((await call("DELETE", `/portal-sessions/${s2.id}`, { headers: { authorization: `Bearer ${t.token}` } })).status).toBe(404);
  });

  it("ends the sessions of a deleted application", async () => {
    const gone = (await t.api("POST", "/applications", { name: "Gone" })).id;
    const made = await link({}, gone);
    const opened = await open(made.token);
    const cookie = opened.headers.get("set-cookie")!.split(";")[0]!;
    expect((await call("GET", "/portal/session", { cookie })).status).toBe(200);
    await t.api("DELETE", `/applications/${gone}`);
    expect((await call("GET", "/portal/session", { cookie })).status).toBe(401);
  });

  it("audits sessions as keys: opening, each change (the session id the actor), secret readings, sign-out, revocations", async () => {
    const s = await session();
    const sub = (await call("POST", "/subscriptions", { cookie: s.cookie, csrf: s.csrf, body: { url: `${receiver.url}/audit`, eventTypes: ["*"] } })).body.id;
    expect((await call("GET", `/subscriptions/${sub}/secrets`, { cookie: s.cookie })).status).toBe(200);
    await call("DELETE", "/portal/session", { cookie: s.cookie, csrf: s.csrf });
    const entries = await audit(`actor=${s.id}`);
    expect(entries.map((e) => e.operation).reverse()).toEqual(["openPortalSession", "createSubscription", "getSubscriptionSecrets", "endPortalSession"]);
    expect(entries.every((e) => e.applicationId === app)).toBe(true);
    expect(entries.find((e) => e.operation === "openPortalSession")).toMatchObject({ resourceId: s.linkId, status: 201 });
    expect(entries.find((e) => e.operation === "createSubscription")).toMatchObject({ resourceId: sub });
    // The operator's side: link made, link revoked, session ended, by bootstrap.
    const s2 = await session();
    await t.api("DELETE", `/portal-sessions/${s2.id}`);
    const ops = await audit("actor=bootstrap");
    expect(ops.find((e) => e.operation === "createPortalLink" && e.resourceId === app)).toBeDefined();
    expect(ops.find((e) => e.operation === "revokePortalSession" && e.resourceId === s2.id)).toBeDefined();
    // A refused change is not a change: nothing recorded for it.
    const s3 = await session();
    await call("POST", "/subscriptions", { cookie: s3.cookie, body: { url: `${receiver.url}/no`, eventTypes: ["*"] } });
    expect((await audit(`actor=${s3.id}`)).map((e) => e.operation)).toEqual(["openPortalSession"]);
  });

  it("frames the page only where the allow-lists say; the admin page never", async () => {
    const refused = await call("PATCH", `/applications/${app}/portal-settings`, { headers: { authorization: `Bearer ${t.token}` }, body: { frameAncestors: ["https://shop.example/path"] } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain("write the origin only");
    for (const bad of ["https://a.example; script-src *", "'self'", "javascript:x", "https://a.example 'unsafe-inline'"]) {
      expect((await call("PATCH", `/applications/${app}/portal-settings`, { headers: { authorization: `Bearer ${t.token}` }, body: { frameAncestors: [bad] } })).status, bad).toBe(400);
    }
    const set = await t.api("PATCH", `/applications/${app}/portal-settings`, { frameAncestors: ["https://Shop.Example", "https://*.acme.example"] });
    expect(set.frameAncestors).toEqual(["https://shop.example", "https://*.acme.example"]);
    const csp = async (path: string, cookie?: string) => (await call("GET", path, { cookie })).headers.get("content-security-policy")!;
    expect(await csp(`/portal?application=${app}`)).toContain("frame-ancestors https://everyone.example https://shop.example https://*.acme.example");
    expect(await csp(`/portal?application=${other}`)).toMatch(/frame-ancestors https:\/\/everyone\.example$/);
    expect(await csp("/portal")).toMatch(/frame-ancestors https:\/\/everyone\.example$/);
    expect(await csp("/admin")).toContain("frame-ancestors 'none'");
    // A browser holding a session of this application, sent a link of another: only what both allow.
    const s = await session();
    expect(await csp(`/portal?application=${other}`, s.cookie)).toMatch(/frame-ancestors https:\/\/everyone\.example$/);
    expect(await csp("/portal", s.cookie)).toContain("https://shop.example");
    // The session may read its application's settings, never change them.
    expect((await call("GET", `/applications/${app}/portal-settings`, { cookie: s.cookie })).status).toBe(200);
    expect((await call("PATCH", `/applications/${app}/portal-settings`, { cookie: s.cookie, csrf: s.csrf, body: { frameAncestors: ["https://mine.example"] } })).status).toBe(403);
  });

  it("validates the theme, and shows it to the session", async () => {
    for (const [theme, message] of [
      [{ accentColor: "red" }, "#rrggbb"],
      [{ accentColor: "#12345" }, "#rrggbb"],
      [{ logoUrl: "javascript:alert(1)" }, "https URL"],
      [{ logoUrl: "http://cdn.example/logo.png" }, "https URL"],
      [{ name: "x".repeat(81) }, "at most 80"],
    ] as const) {
      const res = await call("PATCH", `/applications/${app}/portal-settings`, { headers: { authorization: `Bearer ${t.token}` }, body: { theme } });
      expect(res.status, JSON.stringify(theme)).toBe(400);
      expect(res.body.error.message).toContain(message);
    }
    await t.api("PATCH", `/applications/${app}/portal-settings`, { theme: { name: "Acme Webhooks", logoUrl: "https://cdn.acme.example/logo.svg", accentColor: "#AA3300" } });
    const s = await session();
    const me = (await call("GET", "/portal/session", { cookie: s.cookie })).body;
    expect(me.theme).toEqual({ name: "Acme Webhooks", logoUrl: "https://cdn.acme.example/logo.svg", accentColor: "#aa3300" });
    expect((await call("GET", "/portal", { cookie: s.cookie })).headers.get("content-security-policy")).toContain("img-src 'self' data: https://cdn.acme.example;");
    // null puts a field back; the others stay.
    const back = await t.api("PATCH", `/applications/${app}/portal-settings`, { theme: { name: null } });
    expect(back.theme).toEqual({ name: null, logoUrl: "https://cdn.acme.example/logo.svg", accentColor: "#aa3300" });
  });

  it("records what each attempt sent, custom header values redacted; the endpoint's success rate and latency", async () => {
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/headers`, eventTypes: ["portal.headers"], headers: { "x-customer-token": "very-secret-value" }, applicationId: app, maxAttempts: 1 });
    const sent = await t.api("POST", "/events", { type: "portal.headers", data: { n: 1 }, applicationId: app });
    // Other subscriptions of this application (earlier tests') take every type too: this one's delivery.
    const deliveryId = sent.deliveries.find((d: Json) => d.subscriptionId === sub.id).id;
    await eventually("the delivery", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(deliveryId)}`)).status === "delivered");
    const [attempt] = (await t.api("GET", `/deliveries/${encodeURIComponent(deliveryId)}/attempts`)).attempts;
    expect(attempt.requestHeaders).toMatchObject({ "content-type": "application/json", "webhook-id": deliveryId, "x-customer-token": "[redacted]" });
    expect(attempt.requestHeaders["webhook-signature"]).toMatch(/^v1,/);
    const received = receiver.received.find((r) => r.headers["webhook-id"] === deliveryId)!;
    expect(attempt.requestHeaders["webhook-signature"]).toBe(received.headers["webhook-signature"]);
    expect(attempt.requestHeaders["webhook-timestamp"]).toBe(received.headers["webhook-timestamp"]);
    expect(attempt.responseExcerpt).toBe("ok");
    const stored = await ctx.db.query<{ request_headers: unknown }>("SELECT request_headers FROM outbound_attempts WHERE delivery_id = $1", [deliveryId]);
    expect(JSON.stringify(stored.rows)).not.toContain("very-secret-value");

    receiver.answer = (r) => (r.path === "/headers" ? 500 : 200);
    const failed = await t.api("POST", "/events", { type: "portal.headers", data: { n: 2 }, applicationId: app });
    const failedId = failed.deliveries.find((d: Json) => d.subscriptionId === sub.id).id;
    await eventually("the failure", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(failedId)}`)).status === "dead");
    receiver.answer = 200;
    const stats = await t.api("GET", `/subscriptions/${sub.id}/stats?minutes=60&bucketMinutes=10`);
    expect(stats.buckets).toHaveLength(6);
    expect(stats.totals).toMatchObject({ attempts: 2, delivered: 1, failed: 1, successRate: 0.5 });
    expect(stats.totals.latencyMsP95).toBeGreaterThanOrEqual(0);
    expect(stats.buckets.reduce((n: number, b: Json) => n + b.attempts, 0)).toBe(2);
    expect((await call("GET", `/subscriptions/${sub.id}/stats?minutes=10080&bucketMinutes=1`, { headers: { authorization: `Bearer ${t.token}` } })).status).toBe(400);
    // Another application's endpoint: as if it did not exist.
    const s = await session();
    expect((await call("GET", `/subscriptions/${otherSub}/stats`, { cookie: s.cookie })).status).toBe(404);
  });
});

describe("PORTAL_FRAME_ANCESTORS", () => {
  it("takes origins, and stops the start naming the variable on anything else", () => {
    expect(loadConfig({ PORTAL_FRAME_ANCESTORS: "https://app.example.com, https://*.example.org,http://127.0.0.1:3000" }).PORTAL_FRAME_ANCESTORS).toBe("https://app.example.com, https://*.example.org,http://127.0.0.1:3000");
    for (const bad of ["https://app.example.com/path", "app.example.com", "https://a.example; script-src *", "'self'", "ftp://a.example"]) {
      expect(() => loadConfig({ PORTAL_FRAME_ANCESTORS: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ PORTAL_FRAME_ANCESTORS: bad }), bad).toThrow(/PORTAL_FRAME_ANCESTORS: use comma-separated origins/);
    }
  });
});
