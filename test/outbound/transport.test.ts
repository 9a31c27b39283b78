import { execFileSync } from "node:child_process";
import type { LookupAddress } from "node:dns";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { Agent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { generateSecret } from "../../shared/outbound/signature.js";
import { AttemptTimeout, postOnce } from "../../shared/outbound/postOnce.js";
import { classifyError, createTransport, type DeliveryRequest, type Transport } from "../../shared/outbound/transport.js";
import { freePort, startServer, type LocalServer } from "./localServer.js";

const secret = generateSecret();
const now = () => Math.floor(Date.now() / 1000);
const request = (url: string, patch: Partial<DeliveryRequest> = {}): DeliveryRequest => ({
  url, webhookId: "evt_1:sub_1", timestamp: now(), body: '{"type":"order.paid","data":{"id":"ord_1"}}', secrets: [secret], ...patch,
});

const servers: LocalServer[] = [];
const transports: Transport[] = [];
async function server(...args: Parameters<typeof startServer>): Promise<LocalServer> {
  const s = await startServer(...args);
  servers.push(s);
  return s;
}
function transport(options: Parameters<typeof createTransport>[0] = {}): Transport {
  const t = createTransport({ allowedDestinations: ["127.0.0.1"], ...options });
  transports.push(t);
  return t;
}
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe("transport: classification against a real HTTP receiver", () => {
  let status = 200;
  let receiver: LocalServer;
  let t: Transport;
  beforeAll(async () => {
    receiver = await startServer((_req, res) => { res.statusCode = status; res.end(`status ${status}`); });
    t = createTransport({ allowedDestinations: ["127.0.0.1"] });
  });
  afterAll(async () => { await t.close(); await receiver.close(); });

  it.each([
    [200, "delivered", null], [201, "delivered", null], [202, "delivered", null], [204, "delivered", null], [299, "delivered", null],
    [408, "retryable", "http_status"], [425, "retryable", "http_status"], [429, "retryable", "http_status"],
    [500, "retryable", "http_status"], [502, "retryable", "http_status"], [503, "retryable", "http_status"], [504, "retryable", "http_status"], [599, "retryable", "http_status"],
    [410, "gone", "http_status"],
    [400, "permanent", "http_status"], [401, "permanent", "http_status"], [403, "permanent", "http_status"], [404, "permanent", "http_status"],
    [409, "permanent", "http_status"], [413, "permanent", "http_status"], [422, "permanent", "http_status"],
    [301, "permanent", "redirect_refused"], [304, "permanent", "redirect_refused"],
  ])("status %i → %s (%s)", async (code, result, errorClass) => {
    status = code;
    const outcome = await t.deliver(request(`${receiver.url}/hook`));
    expect(outcome).toMatchObject({ result, status: code, errorClass });
    expect(outcome.latencyMs).toBeGreaterThanOrEqual(0);
    expect(outcome.responseExcerpt).toBe(code === 204 || code === 304 ? "" : `status ${code}`);
  });
});

describe("transport: the request a receiver sees", () => {
  it("posts the exact body with Standard Webhooks headers that the standardwebhooks library verifies", async () => {
    const s = await server((_q, r) => r.end("ok"));
    const [oldSecret, newSecret] = [generateSecret(), generateSecret()];
    const body = JSON.stringify({ type: "order.paid", data: { id: "ord_9", amount: 1999, city: "Zürich" } });
    const out = await transport().deliver(request(`${s.url}/hooks/orders?tenant=7`, { body, secrets: [oldSecret, newSecret], webhookId: "evt_9:sub_3" }));
    expect(out.result).toBe("delivered");
    const got = s.received[0]!;
    expect(got.url).toBe("/hooks/orders?tenant=7");
    expect(got.body).toBe(body);
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["webhook-id"]).toBe("evt_9:sub_3");
    expect(got.headers["user-agent"]).toMatch(/^multicloud-webhooks\//);
    const headers = { "webhook-id": String(got.headers["webhook-id"]), "webhook-timestamp": String(got.headers["webhook-timestamp"]), "webhook-signature": String(got.headers["webhook-signature"]) };
    expect(new Webhook(oldSecret).verify(got.body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(newSecret).verify(got.body, headers)).toEqual(JSON.parse(body));
  });

  it("reuses keep-alive connections for sequential deliveries", async () => {
    const s = await server((_q, r) => r.end("ok"));
    const single = transport({ connectionsPerOrigin: 1 });
    for (let i = 0; i < 25; i++) expect((await single.deliver(request(s.url, { webhookId: `evt_${i}:sub_1` }))).result).toBe("delivered");
    expect(s.received).toHaveLength(25);
    expect(s.connections()).toBe(1);
    // With a wider pool, undici may open a second socket when the next request is dispatched in
    // the same tick the previous response ends; it still reuses them instead of one per request.
    const pooled = transport();
    for (let i = 0; i < 25; i++) await pooled.deliver(request(s.url, { webhookId: `evt_${i}:sub_2` }));
    expect(s.received).toHaveLength(50);
    expect(s.connections() - 1).toBeLessThanOrEqual(2);
  });

  it("caps concurrent connections per origin at connectionsPerOrigin", async () => {
    const s = await server((_q, r) => setTimeout(() => r.end("ok"), 20));
    const t = transport({ connectionsPerOrigin: 3 });
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => t.deliver(request(s.url, { webhookId: `evt_${i}:sub_1` }))));
    expect(outcomes.every((o) => o.result === "delivered")).toBe(true);
    expect(s.connections()).toBe(3);
  });

  it("keeps only responseExcerptBytes of a large body and still answers", async () => {
    const big = "x".repeat(40) + "y".repeat(2 * 1024 * 1024);
    const s = await server((_q, r) => { r.statusCode = 500; r.end(big); });
    const out = await transport({ responseExcerptBytes: 50 }).deliver(request(s.url));
    expect(out).toMatchObject({ result: "retryable", status: 500 });
    expect(out.responseExcerpt).toBe("x".repeat(40) + "y".repeat(10));
  });

  it("defaults the excerpt to 1 KiB and keeps the connection when the rest is small", async () => {
    const s = await server((_q, r) => r.end("z".repeat(5000)));
    const t = transport({ connectionsPerOrigin: 1 });
    const a = await t.deliver(request(s.url));
    const b = await t.deliver(request(s.url));
    expect(a.responseExcerpt).toHaveLength(1024);
    expect(b.result).toBe("delivered");
    expect(s.connections()).toBe(1);
  });

  it("does not cut a multi-byte character in half", async () => {
    const s = await server((_q, r) => r.end("ab€€€"));
    const out = await transport({ responseExcerptBytes: 4 }).deliver(request(s.url));
    expect(out.responseExcerpt).toBe("ab");
  });
});

describe("transport: failures", () => {
  it("a receiver that does not answer in time → retryable timeout", async () => {
    const s = await server(() => { /* never answers */ });
    const out = await transport({ timeoutMs: 150 }).deliver(request(s.url));
    expect(out).toMatchObject({ result: "retryable", status: null, errorClass: "timeout", responseExcerpt: null });
  });

  it("the per-request timeoutMs overrides the transport's", async () => {
    const s = await server((_q, r) => setTimeout(() => r.end("late"), 400));
    const t = transport({ timeoutMs: 5000 });
    expect((await t.deliver(request(s.url, { timeoutMs: 100 }))).errorClass).toBe("timeout");
  });

  it("the deadline covers waiting for a pooled connection; a request that times out in the queue is never sent", async () => {
    const s = await server((_q, r) => setTimeout(() => r.end("slow"), 300));
    const t = transport({ connectionsPerOrigin: 1 });
    const [first, queued] = await Promise.all([
      t.deliver(request(s.url, { webhookId: "evt_first:sub_1", timeoutMs: 5000 })),
      t.deliver(request(s.url, { webhookId: "evt_queued:sub_1", timeoutMs: 100 })),
    ]);
    expect(first).toMatchObject({ result: "delivered", responseExcerpt: "slow" });
    expect(queued).toMatchObject({ result: "retryable", errorClass: "timeout" });
    // Once the connection frees up, the expired request is aborted before a byte is written.
    expect((await t.deliver(request(s.url, { webhookId: "evt_after:sub_1" }))).result).toBe("delivered");
    expect(s.received.map((r) => r.headers["webhook-id"])).toEqual(["evt_first:sub_1", "evt_after:sub_1"]);
  });

  it("attempts whose deadlines pass together: each a timeout without a stack trace, every connection torn down", async () => {
    // 40 at once: more than one of the turns in which passed deadlines are handled (postOnce.ts).
    let closed = 0;
    const hanging = createHttpServer(() => { /* never answers */ });
    hanging.on("connection", (socket) => socket.on("close", () => { closed += 1; }));
    await new Promise<void>((r) => hanging.listen(0, "127.0.0.1", r));
    const agent = new Agent({ connections: 64 });
    try {
      const { port } = hanging.address() as AddressInfo;
      const attempts = Array.from({ length: 40 }, () => postOnce(agent, {
        origin: `http://127.0.0.1:${port}`, path: "/", headers: { "content-type": "application/json" }, body: "{}", deadlineMs: 100, excerptBytes: 16, drainBytes: 0,
      }).then(() => null, (error: unknown) => error));
      const errors = await Promise.all(attempts);
      for (const error of errors) {
        expect(error).toBeInstanceOf(AttemptTimeout);
        expect((error as Error).stack).toBe("AttemptTimeout: no complete response within 100 ms");
        expect(classifyError(error)).toBe("timeout");
      }
      await expect.poll(() => closed).toBe(40);
    } finally {
      await agent.close();
      hanging.closeAllConnections();
      await new Promise<void>((r) => hanging.close(() => r()));
    }
  });

  it("headers sent but the body stalls → timeout (the deadline covers the body)", async () => {
    const s = await server((_q, r) => { r.writeHead(200, { "content-type": "text/plain" }); r.write("partial"); });
    const out = await transport({ timeoutMs: 150 }).deliver(request(s.url));
    expect(out).toMatchObject({ result: "retryable", errorClass: "timeout" });
  });

  it("nothing listening → retryable connection_refused", async () => {
    const port = await freePort();
    const out = await transport().deliver(request(`http://127.0.0.1:${port}/`));
    expect(out).toMatchObject({ result: "retryable", status: null, errorClass: "connection_refused" });
  });

  it("the receiver drops the connection → retryable connection_reset", async () => {
    const s = await server((req) => req.socket.destroy());
    const out = await transport().deliver(request(s.url));
    expect(out).toMatchObject({ result: "retryable", status: null, errorClass: "connection_reset" });
  });

  it("an unknown name → retryable dns_failure", async () => {
    const out = await transport({ resolve: async () => { throw Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.example"), { code: "ENOTFOUND" }); } })
      .deliver(request("http://nowhere.example/"));
    expect(out).toMatchObject({ result: "retryable", errorClass: "dns_failure" });
  });

  it("an HTTPS receiver with an untrusted (self-signed) certificate → retryable tls_error, nothing posted", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wh-tls-"));
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"),
      "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
    let posts = 0;
    const https = createHttpsServer({ key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) }, (_q, r) => { posts += 1; r.end("ok"); });
    await new Promise<void>((resolve) => https.listen(0, "127.0.0.1", resolve));
    try {
      const out = await transport().deliver(request(`https://127.0.0.1:${(https.address() as AddressInfo).port}/`));
      expect(out).toMatchObject({ result: "retryable", status: null, errorClass: "tls_error" });
      expect(posts).toBe(0);
    } finally {
      https.closeAllConnections();
      await new Promise((resolve) => https.close(resolve));
    }
  });

  it("a redirect is not followed: permanent redirect_refused, the target never hit", async () => {
    const target = await server((_q, r) => r.end("target"));
    const s = await server((_q, r) => { r.writeHead(307, { location: `${target.url}/elsewhere` }); r.end(); });
    const out = await transport().deliver(request(s.url));
    expect(out).toMatchObject({ result: "permanent", status: 307, errorClass: "redirect_refused" });
    expect(target.received).toHaveLength(0);
  });

  it("Retry-After in seconds and as an HTTP-date is reported", async () => {
    const s = await server((req, r) => {
      r.statusCode = req.url === "/date" ? 503 : 429;
      r.setHeader("retry-after", req.url === "/date" ? new Date(Date.now() + 90_000).toUTCString() : "120");
      r.end();
    });
    const t = transport();
    expect(await t.deliver(request(`${s.url}/seconds`))).toMatchObject({ result: "retryable", status: 429, retryAfterSeconds: 120 });
    const dated = await t.deliver(request(`${s.url}/date`));
    expect(dated).toMatchObject({ result: "retryable", status: 503 });
    expect(dated.retryAfterSeconds).toBeGreaterThanOrEqual(85);
    expect(dated.retryAfterSeconds).toBeLessThanOrEqual(91);
  });

  it.each([["ftp://127.0.0.1/"], ["not a url"], ["http://user:pw@127.0.0.1/"]])("an unusable URL %s → permanent invalid_request", async (url) => {
    expect(await transport().deliver(request(url))).toMatchObject({ result: "permanent", errorClass: "invalid_request" });
  });

  it("an invalid secret → permanent invalid_request, nothing sent", async () => {
    const s = await server((_q, r) => r.end());
    expect(await transport().deliver(request(s.url, { secrets: ["whsec_short"] }))).toMatchObject({ result: "permanent", errorClass: "invalid_request" });
    expect(s.connections()).toBe(0);
  });
});

describe("transport: destination policy on the connected address", () => {
  it("without an allow-list a loopback receiver is refused before any connection", async () => {
    const s = await server((_q, r) => r.end());
    const t = createTransport({});
    transports.push(t);
    for (const url of [s.url, `http://localhost:${s.port}/`, `http://[::ffff:127.0.0.1]:${s.port}/`, `http://2130706433:${s.port}/`]) {
      expect(await t.deliver(request(url))).toMatchObject({ result: "permanent", status: null, errorClass: "destination_refused" });
    }
    expect(s.connections()).toBe(0);
  });

  it("a public-looking name that resolves to loopback is refused at connect time", async () => {
    const s = await server((_q, r) => r.end());
    const t = createTransport({ resolve: async () => [{ address: "127.0.0.1", family: 4 }] });
    transports.push(t);
    expect(await t.deliver(request(`http://hooks.partner.example:${s.port}/`))).toMatchObject({ result: "permanent", errorClass: "destination_refused" });
    expect(s.connections()).toBe(0);
  });

  it("the injected resolver is what the socket connects to (an allow-listed name reaches the server)", async () => {
    const s = await server((_q, r) => r.end("hi"));
    const t = createTransport({ allowedDestinations: ["hooks.partner.example"], resolve: async () => [{ address: "127.0.0.1", family: 4 }] });
    transports.push(t);
    expect(await t.deliver(request(`http://hooks.partner.example:${s.port}/`))).toMatchObject({ result: "delivered", responseExcerpt: "hi" });
    expect(s.received[0]?.headers.host).toBe(`hooks.partner.example:${s.port}`);
  });

  it("DNS rebinding: the second connection resolves again and is refused when the answer turns private", async () => {
    // 127.0.0.2 plays the "public" address (allow-listed); 127.0.0.1 the internal one behind it.
    const outside = await server((_q, r) => { r.setHeader("connection", "close"); r.end("outside"); }, "127.0.0.2");
    // The internal server listens on the same port, so a rebound connection would reach it.
    const inside = await server((_q, r) => r.end("inside"), "127.0.0.1", outside.port);
    const answers: LookupAddress[][] = [[{ address: "127.0.0.2", family: 4 }], [{ address: "127.0.0.1", family: 4 }]];
    let calls = 0;
    const t = createTransport({ allowedDestinations: ["127.0.0.2"], resolve: async () => answers[Math.min(calls++, 1)]! });
    transports.push(t);
    const url = `http://rebind.example:${outside.port}/`;
    expect(await t.deliver(request(url))).toMatchObject({ result: "delivered", responseExcerpt: "outside" });
    const second = await t.deliver(request(url));
    expect(second).toMatchObject({ result: "permanent", errorClass: "destination_refused" });
    expect(calls).toBe(2);
    expect(inside.connections()).toBe(0);
  });
});
