/**
 * Issue 13, Must-show 3, one scenario for every cloud: the management function of the stack,
 * started with exactly the stack's settings and the token of the (simulated) secret store, driven
 * through the deployed shape of its API (each cloud passes a `call` that builds its platform's
 * request: API Gateway's event, the Functions host's HttpRequest, the gateway's forwarded HTTP
 * request). Through that API alone: a wrong token is refused; a subscription is created; an event
 * sent is delivered by the relay (run as its schedule runs it) to a receiver that verifies the
 * signature; a delivery that died (its endpoint refused it, one attempt allowed) is listed as a dead
 * letter, replayed once the endpoint works again, and delivered.
 */
import { createServer } from "node:http";
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
    // The document and the reference page are public, under the same prefix.
    const document = await call("GET", "/openapi.json");
    ok(document, 200, "openapi.json");
    expect(document.json.openapi).toMatch(/^3\.1/);

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
  } finally {
    await receiver.close();
  }
}
