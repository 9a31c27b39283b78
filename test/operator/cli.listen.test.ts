/**
 * Issue 32 must-show 2: `webhooks listen`, the real bin/webhooks.js as a child process, against
 * the platform in this process (relay running) on each backend. A receiver on this machine gets
 * the deliveries signed as the relay signs them (verified with the standardwebhooks library); its
 * answers are the attempts (a 500 is retried with the backoff, in the attempt log beside the 200
 * that follows); the relay sends the subscription nothing meanwhile. A listener SIGKILLed while
 * the receiver holds a delivery loses nothing: its lease runs out and another listen gets it.
 * Ctrl-C detaches at once: a delivery it held goes to the relay without waiting for its lease.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachBackend } from "../support/databases.js";
import { startTestPlatform, type TestPlatform } from "./harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = `${ROOT}bin/webhooks.js`;

interface Received { id: string; type: string; verified: boolean; at: number }

/** An HTTP receiver on a free port: records each request (signature checked), answers as `answer` says. */
async function receiver(secret: () => string, answer: (r: Received, res: ServerResponse) => void): Promise<{ url: string; got: Received[]; close(): Promise<void> }> {
  const got: Received[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let verified = false;
      try {
        new Webhook(secret()).verify(body, { "webhook-id": String(req.headers["webhook-id"]), "webhook-timestamp": String(req.headers["webhook-timestamp"]), "webhook-signature": String(req.headers["webhook-signature"]) });
        verified = true;
      } catch { /* recorded as not verified */ }
      const r = { id: String(req.headers["webhook-id"]), type: (JSON.parse(body) as { type: string }).type, verified, at: Date.now() };
      got.push(r);
      answer(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    got,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** `webhooks listen …` as a child process; its output kept as it comes. */
function startListen(t: TestPlatform, args: string[], token = t.token): { child: ChildProcess; out: () => string; err: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [BIN, "listen", ...args], {
    cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", WEBHOOKS_URL: t.baseUrl, ADMIN_TOKEN: token }, stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (c: Buffer) => { out += c.toString(); });
  child.stderr!.on("data", (c: Buffer) => { err += c.toString(); });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, out: () => out, err: () => err, exited };
}

async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 120_000, said?: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${said ? `; the CLI said:\n${said()}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describeEachBackend("webhooks listen", (ctx) => {
  let t: TestPlatform;
  let secret = "";
  let subscriptionId = "";
  /** The subscription's own endpoint: what the relay sends, while nobody listens. */
  let endpoint: Awaited<ReturnType<typeof receiver>>;
  /** The developer's local receiver: A answered 500 once, B and D held until released. */
  let local: Awaited<ReturnType<typeof receiver>>;
  const holding: ServerResponse[] = [];
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    t = await startTestPlatform(ctx.db, {});
    endpoint = await receiver(() => secret, (_r, res) => res.end("ok"));
    local = await receiver(() => secret, (r, res) => {
      const seenBefore = local.got.filter((g) => g.id === r.id).length > 1;
      if (r.type === "listen.a" && !seenBefore) { res.statusCode = 500; res.setHeader("x-local", "boom"); res.end("local failure"); return; }
      if ((r.type === "listen.b" || r.type === "listen.d") && !seenBefore) { holding.push(res); return; } // held: no answer
      res.end("thanks");
    });
    const sub = await t.api("POST", "/subscriptions", { url: endpoint.url, eventTypes: ["listen.*"] });
    subscriptionId = sub.id;
    secret = sub.secrets[0];
  }, 180_000);
  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    for (const res of holding) res.destroy();
    await local?.close();
    await endpoint?.close();
    await t?.stop();
  });

  const send = async (type: string, id: string) => { await t.api("POST", "/events", { id, type, data: { id } }); return `${id}:${subscriptionId}`; };
  const attempts = async (deliveryId: string) => (await t.api("GET", `/deliveries/${encodeURIComponent(deliveryId)}/attempts`)).attempts as { status: number | null; result: string; listenerId?: string | null; responseHeaders?: Record<string, string> | null }[];

  it("forwards signed deliveries; the local answers are the attempts (a 500 retried); the relay sends nothing meanwhile", async () => {
    const first = startListen(t, [subscriptionId, "--forward-to", local.url, "--lease", "5"]);
    children.push(first.child);
    await until("the listener attached", () => {
      if (first.child.exitCode !== null) throw new Error(`webhooks listen exited ${first.child.exitCode}: ${first.err()}`);
      return first.err().includes(`Listening to ${subscriptionId}`);
    });

    const a = await send("listen.a", `evt_a_${ctx.backend}`);
    await until("A answered 500, then retried and delivered", () => local.got.filter((g) => g.id === a).length >= 2);
    const deliveredA = await until("A delivered", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(a)}`)).status === "delivered");
    expect(deliveredA).toBe(true);
    expect(local.got.filter((g) => g.id === a).every((g) => g.verified)).toBe(true);
    const log = await attempts(a);
    expect(log.map((x) => [x.status, x.result])).toEqual([[500, "retryable"], [200, "delivered"]]);
    expect(log.every((x) => typeof x.listenerId === "string")).toBe(true);
    expect(log[0]!.responseHeaders).toMatchObject({ "x-local": "boom" });
    await until("both lines printed", () => (first.out().match(new RegExp(`listen\\.a  ${a}`, "g")) ?? []).length === 2);
    expect(first.out()).toMatch(new RegExp(`listen\\.a  ${a}  500  \\d+ ms  attempt 1, retry in \\d+ s`));
    expect(first.out()).toMatch(new RegExp(`listen\\.a  ${a}  200  \\d+ ms  attempt 2, delivered`));
    expect(endpoint.got).toEqual([]); // the relay left the subscription to the listener

    // B is held by the receiver (no answer) when the CLI is killed outright.
    const b = await send("listen.b", `evt_b_${ctx.backend}`);
    await until("B at the local receiver", () => local.got.some((g) => g.id === b));
    // A second listen attaches meanwhile (so the subscription stays listened to however slowly it
    // starts), then the first is killed outright.
    const second = startListen(t, [subscriptionId, "--forward-to", local.url, "--lease", "300"]);
    children.push(second.child);
    await until("the second listener attached", () => second.err().includes("note: 1 other listener is attached"));
    first.child.kill("SIGKILL");
    expect(await first.exited).toBeNull();

    // The second takes B over once the dead listener's 5 s lease has run out.
    await until("B delivered again, to the second listener", () => local.got.filter((g) => g.id === b).length >= 2);
    await until("B delivered", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(b)}`)).status === "delivered");
    const logB = await attempts(b);
    expect(logB.map((x) => [x.status, x.result])).toEqual([[200, "delivered"]]); // the killed listener answered nothing
    expect(endpoint.got).toEqual([]);

    // D is held by the receiver when the second listener gets Ctrl-C: released at once, the relay
    // sends it to the endpoint long before that listener's 300 s lease would have run out.
    const d = await send("listen.d", `evt_d_${ctx.backend}`);
    await until("D at the local receiver", () => local.got.some((g) => g.id === d));
    second.child.kill("SIGINT");
    expect(await second.exited, second.err()).toBe(0);
    expect(second.err()).toContain(`Stopped listening; 1 delivery given back. The relays resume ${subscriptionId}.`);
    await until("D at the endpoint, from the relay", () => endpoint.got.some((g) => g.id === d), 120_000);
    expect(endpoint.got.find((g) => g.id === d)!.verified).toBe(true);
    await until("D delivered", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(d)}`)).status === "delivered");

    // The audit log has each listener's attach and detach, not its pulls, heartbeats and answers (the attempt log has those).
    const audited = async (operation: string) => (await t.api("GET", `/audit-log?operation=${operation}`)).entries.length;
    expect(await audited("attachListener")).toBe(2);
    expect(await audited("detachListener")).toBe(1); // the killed one never detached
    for (const op of ["pullListenerDeliveries", "listenerHeartbeat", "answerListenerDeliveries"]) expect(await audited(op), op).toBe(0);
  }, 420_000);

  it("errors clearly: the platform unreachable, a key without write access, no such subscription, the subscription deleted meanwhile", async () => {
    const away = startListen({ ...t, baseUrl: "http://127.0.0.1:9" }, [subscriptionId, "--forward-to", local.url]);
    expect(await away.exited).toBe(1);
    expect(away.err()).toContain("Could not reach the platform at http://127.0.0.1:9");

    const readOnly = await t.api("POST", "/keys", { access: "read" });
    const refused = startListen(t, [subscriptionId, "--forward-to", local.url], readOnly.key);
    expect(await refused.exited).toBe(1);
    expect(refused.err()).toMatch(/403 read_only.*it needs a key with write access to it/);

    const missing = startListen(t, ["sub_nope", "--forward-to", local.url]);
    expect(await missing.exited).toBe(1);
    expect(missing.err()).toContain("404");

    // The subscription deleted while it listens: it stops with the reason, not listening to nothing forever.
    const doomed = await t.api("POST", "/subscriptions", { url: endpoint.url, eventTypes: ["doomed.*"] });
    const orphan = startListen(t, [doomed.id, "--forward-to", local.url]);
    await until("the listener attached", () => orphan.err().includes(`Listening to ${doomed.id}`));
    await t.api("DELETE", `/subscriptions/${doomed.id}`);
    expect(await orphan.exited).toBe(1);
    expect(orphan.err()).toContain(`404 not_found: No subscription with id "${doomed.id}"`);

    const usage = startListen(t, [subscriptionId]);
    expect(await usage.exited).toBe(2);
    expect(usage.err()).toContain("--forward-to is required");
  }, 300_000);
});
