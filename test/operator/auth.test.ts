/**
 * Authentication is a step of its own that yields a principal (room for issue 17's scoped keys):
 * the default compares the bearer token with ADMIN_TOKEN; another authenticator can be given.
 */
import type { AddressInfo } from "node:net";
import { expect, it } from "vitest";
import { createHttpServer, type Route } from "../../shared/server/router.js";

const whoami: Route = { method: "GET", path: "/whoami", auth: "admin", handler: async (req) => ({ status: 200, body: { principal: req.principal ?? null } }) };
const open: Route = { method: "GET", path: "/open", auth: "none", handler: async (req) => ({ status: 200, body: { principal: req.principal ?? null } }) };

async function serve(options: Partial<Parameters<typeof createHttpServer>[0]>) {
  const server = createHttpServer({ routes: [whoami, open], adminToken: "auth-test-token-0123456789", ...options });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, close: () => new Promise<void>((r) => server.close(() => r())) };
}

it("the default: the admin token as a bearer, anything else 401 with WWW-Authenticate; public routes carry no principal", async () => {
  const s = await serve({});
  try {
    const ok = await fetch(`${s.base}/whoami`, { headers: { authorization: "Bearer auth-test-token-0123456789" } });
    expect(await ok.json()).toEqual({ principal: { kind: "admin" } });
    for (const header of ["Bearer auth-test-token-012345678", "Bearer auth-test-token-01234567890", "Basic x", ""]) {
      const r = await fetch(`${s.base}/whoami`, { headers: header ? { authorization: header } : {} });
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toBe("Bearer");
      expect((await r.json()).error.code).toBe("unauthorized");
    }
    expect(await (await fetch(`${s.base}/open`)).json()).toEqual({ principal: null });
  } finally {
    await s.close();
  }
});

it("another authenticator decides instead (e.g. keys looked up asynchronously)", async () => {
  const s = await serve({ authenticate: async (headers) => (headers["x-key"] === "k1" ? { kind: "admin" } : undefined) });
  try {
    expect((await fetch(`${s.base}/whoami`, { headers: { "x-key": "k1" } })).status).toBe(200);
    expect((await fetch(`${s.base}/whoami`, { headers: { authorization: "Bearer auth-test-token-0123456789" } })).status).toBe(401);
  } finally {
    await s.close();
  }
});
