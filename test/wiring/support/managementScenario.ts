/**
 * Issue 13, Must-show 3, one scenario for every cloud: the management function of the stack,
 * started with exactly the stack's settings and the token of the (simulated) secret store, driven
 * through the deployed shape of its API (each cloud passes a `call` that builds its platform's
 * request: API Gateway's event, the Functions host's HttpRequest, the gateway's forwarded HTTP
 * request). Through that API alone: a wrong token is refused; a subscription is created; an event
 * sent is delivered by the relay (run as its schedule runs it) to a receiver that verifies the
 * signature; a delivery that died (its endpoint refused it, one attempt allowed) is listed as a dead
 * letter, replayed once the endpoint works again, and delivered. Then the real CLI
 * (`bin/webhooks.js <command> --url <management_url> --token …`) lists them, through a local HTTP front door
 * that hands each of its requests to the same `call`: `webhooks --url` against the deployed shape.
 */
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect } from "vitest";
import { listenLocal, verifyingHandler, type Received } from "./receivers.js";

export interface ManagementAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * One request to the management API as the cloud's front door hands it to the function. `path` is
 * what a client appends to `management_url` (`/subscriptions?limit=1`); `token` goes in
 * `Authorization: Bearer …` as the CLI sends it (the cloud's `call` moves it where its gateway does).
 */
export type ManagementCall = (method: string, path: string, options?: { token?: string; body?: unknown }) => Promise<ManagementAnswer>;

/** Parses a JSON answer when it is one. */
export function answer(status: number, headers: Record<string, string>, text: string): ManagementAnswer {
  let json: unknown;
  try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
  return { status, headers, text, json };
}

export interface ScenarioOptions {
  call: ManagementCall;
  /** The admin token as the secret store holds it. */
  token: string;
  /** Runs the relay once, as its schedule would. */
  relayTick(): Promise<unknown>;
  /** The function's output, for failure messages. */
  output(): string;
}

const BIN = fileURLToPath(new URL("../../../bin/webhooks.js", import.meta.url));

/**
 * A local HTTP front door for the CLI: each request (its method, path under `/api`, bearer token and
 * JSON body) goes through `call`, as the cloud's gateway would hand it to the function; the answer
 * goes back as it came. Its URL plays `management_url`.
 */
export async function startFrontDoor(call: ManagementCall): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      try {
        const path = (req.url ?? "/").replace(/^\/api(?=\/|\?|$)/, "");
        const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
        const text = Buffer.concat(chunks).toString("utf8");
        const a = await call(req.method ?? "GET", path || "/", { token, body: text ? JSON.parse(text) : undefined });
        const headers = Object.fromEntries(Object.entries(a.headers).filter(([k]) => !["content-length", "transfer-encoding", "connection"].includes(k)));
        res.writeHead(a.status, headers).end(a.text);
      } catch (error) {
        res.writeHead(502, { "content-type": "text/plain" }).end(`front door: ${(error as Error).message}`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/api`, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

/** `webhooks <args> --url <url> --token <token> --json`, the real CLI in a child process (its options follow the command). */
export async function webhooksCli(url: string, token: string, args: string[]): Promise<unknown> {
  const { stdout } = await promisify(execFile)(process.execPath, [BIN, ...args, "--url", url, "--token", token, "--json"], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    timeout: 60_000,
  });
  return JSON.parse(stdout);
}

const SECRET = `whsec_${Buffer.from("wiring-management-subscriber-32b").toString("base64")}`;

/** A local receiver: `/ok` accepts; `/flaky` refuses with 400 (a permanent failure) until `heal()`. */
export async function startScenarioReceiver() {
  const received: Received[] = [];
  let healed = false;
  const server = await listenLocal(() => createServer(verifyingHandler(SECRET, received, (path) => (path === "/flaky" && !healed ? 400 : 200))));
  return { url: `http://127.0.0.1:${server.port}`, received, heal: () => { healed = true; }, close: server.close };
}

export async function managementScenario(options: ScenarioOptions): Promise<void> {
  const { call, token, relayTick, output } = options;
  const receiver = await startScenarioReceiver();
  const ok = (a: ManagementAnswer, status: number, what: string) => expect(a.status, `${what}: ${a.text.slice(0, 500)}\n${output().slice(-3000)}`).toBe(status);
  try {
    // Without the token, or with another one: 401 in the API's error shape, nothing else said.
    for (const wrong of [undefined, `${token}x`, "not-the-admin-token-at-all"]) {
      const refused = await call("GET", "/subscriptions", { token: wrong });
      ok(refused, 401, `token ${wrong === undefined ? "absent" : "wrong"}`);
      expect(refused.json).toMatchObject({ error: { code: "unauthorized" } });
      expect(refused.headers["www-authenticate"]).toBe("Bearer");
    }
    // The document is public, under the same prefix.
    const document = await call("GET", "/openapi.json");
    ok(document, 200, "openapi.json");
    expect(document.json.openapi).toMatch(/^3\.1/);
    // The admin page, under the prefix too: its links and API calls go below management_url.
    const page = await call("GET", "/admin");
    ok(page, 200, "the admin page");
    expect(page.headers["content-type"]).toMatch(/^text\/html/);

    const created = await call("POST", "/subscriptions", { token, body: { url: `${receiver.url}/ok`, eventTypes: ["wiring.management.sent"], secrets: [SECRET] } });
    ok(created, 201, "create a subscription");
    const subscription = created.json as { id: string; url: string };
    expect(subscription.url).toBe(`${receiver.url}/ok`);
    const listed = await call("GET", `/subscriptions/${subscription.id}`, { token });
    ok(listed, 200, "get the subscription");

    const sent = await call("POST", "/events", { token, body: { type: "wiring.management.sent", data: { n: 1 } } });
    ok(sent, 201, "send an event");
    const [delivery] = sent.json.deliveries as { id: string; subscriptionId: string; status: string }[];
    expect(delivery).toMatchObject({ subscriptionId: subscription.id, status: "pending" });
    await relayTick();
    const seen = await call("GET", `/deliveries/${delivery!.id}`, { token });
    ok(seen, 200, "get the delivery");
    expect(seen.json.status, output().slice(-3000)).toBe("delivered");
    const got = receiver.received.filter((r) => r.path === "/ok" && r.type === "wiring.management.sent");
    expect(got).toHaveLength(1);
    expect(got[0]!.verified).toBe(true);
    expect(got[0]!.body).toContain(sent.json.eventId);

    // A dead letter: one attempt allowed, refused by the endpoint.
    const flaky = await call("POST", "/subscriptions", { token, body: { url: `${receiver.url}/flaky`, eventTypes: ["wiring.management.doomed"], secrets: [SECRET], maxAttempts: 1 } });
    ok(flaky, 201, "create the flaky subscription");
    const doomed = await call("POST", "/events", { token, body: { type: "wiring.management.doomed", data: { n: 2 } } });
    ok(doomed, 201, "send the event that dies");
    await relayTick();
    const dead = await call("GET", `/dead-letters?subscriptionId=${encodeURIComponent(flaky.json.id)}`, { token });
    ok(dead, 200, "list dead letters");
    expect(dead.json.deadLetters.map((d: { id: string }) => d.id)).toEqual([doomed.json.deliveries[0].id]);

    receiver.heal();
    const replayed = await call("POST", `/dead-letters/${doomed.json.deliveries[0].id}/replay`, { token });
    ok(replayed, 200, "replay the dead letter");
    expect(replayed.json.status).toBe("pending");
    await relayTick();
    const after = await call("GET", `/deliveries/${doomed.json.deliveries[0].id}`, { token });
    ok(after, 200, "get the replayed delivery");
    expect(after.json.status, output().slice(-3000)).toBe("delivered");
    const flakyHits = receiver.received.filter((r) => r.path === "/flaky");
    expect(flakyHits).toHaveLength(2);
    expect(flakyHits.every((r) => r.verified)).toBe(true);
    const empty = await call("GET", `/dead-letters?subscriptionId=${encodeURIComponent(flaky.json.id)}`, { token });
    expect(empty.json.deadLetters).toEqual([]);

    // The CLI against management_url, as an operator runs it against a deployment.
    const door = await startFrontDoor(call);
    try {
      const listed = await webhooksCli(door.url, token, ["subscriptions", "list"]) as { subscriptions?: { id: string }[] } | { id: string }[];
      const ids = (Array.isArray(listed) ? listed : listed.subscriptions ?? []).map((x) => x.id);
      expect(ids).toEqual(expect.arrayContaining([subscription.id, flaky.json.id]));
      const events = JSON.stringify(await webhooksCli(door.url, token, ["events", "get", doomed.json.eventId]));
      expect(events).toContain(doomed.json.deliveries[0].id);
      await expect(webhooksCli(door.url, `${token}x`, ["dlq", "list"])).rejects.toThrow(/401|refused the token/);
      // As the issue writes it: `webhooks --url <management_url> …`, the options before the command.
      const { stdout } = await promisify(execFile)(process.execPath, [BIN, "--url", door.url, "--token", token, "--json", "subscriptions", "get", subscription.id], { env: { PATH: process.env.PATH, HOME: process.env.HOME }, timeout: 60_000 });
      expect(JSON.parse(stdout)).toMatchObject({ id: subscription.id, url: `${receiver.url}/ok` });
    } finally {
      await door.close();
    }
  } finally {
    await receiver.close();
  }
}
