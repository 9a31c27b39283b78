/**
 * Issue 29, Must show 1: endpoint authentication by OAuth 2.0 client credentials against a real
 * token endpoint (test/support/oauth2TokenTestPeer.ts) and a receiver that accepts only its live
 * tokens; and HTTP Basic. Four relays on one database fetch one token per expiry; a token revoked
 * early costs one 401 and one refresh, whoever holds it; a token endpoint that is down makes the
 * attempts retryable (and is not asked once per delivery), a wrong client secret dead-letters them
 * as a misconfiguration, each recorded in the attempt log; rotations lose no delivery. Both backends.
 */
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import {
  createRelay, createSubscription, enqueue, getDelivery, getSubscription, listAttempts, replayDeadLetter, updateSubscription, type Relay,
} from "../../shared/outbound/index.js";
import { createDestinationPolicy } from "../../shared/outbound/destinationPolicy.js";
import { createEndpointAuth } from "../../shared/outbound/endpointAuth/index.js";
import { requestToken } from "../../shared/outbound/endpointAuth/oauth2.js";
import { createTokenCache } from "../../shared/outbound/endpointAuth/tokenCache.js";
import type { RetryPolicy } from "../../shared/outbound/retryPolicy.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { describeEachBackend } from "../support/databases.js";
import { startOauth2TokenTestPeer, type Oauth2TokenTestPeer } from "../support/oauth2TokenTestPeer.js";
import { relayFleet } from "./support/relayFleet.js";
import { resetOutbound, startReceiver, waitFor, type Receiver } from "./support/receiver.js";

const FAST: RetryPolicy = { baseSeconds: 0.05, capSeconds: 0.2, maxAttempts: 5, retryAfterCapSeconds: 2 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeEachBackend("endpoint authentication: OAuth 2.0 client credentials and Basic", (ctx) => {
  let transport: Transport;
  let receiver: Receiver | undefined;
  let peer: Oauth2TokenTestPeer | undefined;
  let relay: Relay | undefined;
  const fleet = relayFleet(ctx);

  beforeAll(() => { transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 }); });
  afterAll(() => transport?.close());
  afterEach(async () => {
    await relay?.stop();
    relay = undefined;
    await fleet.stopAll();
    await receiver?.close();
    receiver = undefined;
    await peer?.close().catch(() => {});
    peer = undefined;
    await fleet.reset();
    await ctx.db.query("DELETE FROM outbound_auth_tokens");
  });

  /** A receiver behind a gateway: 200 for a live token of `peer`, 401 otherwise; records what each request got. */
  const gatedReceiver = async (p: Oauth2TokenTestPeer) => {
    const answers: { webhookId: string; authorization: string | undefined; status: number }[] = [];
    receiver = await startReceiver((r) => {
      const status = p.accepts(r.headers.authorization) ? 200 : 401;
      answers.push({ webhookId: r.webhookId, authorization: r.headers.authorization, status });
      return { status, body: status === 401 ? '{"error":"invalid_token"}' : "" };
    });
    return answers;
  };
  const oauth2 = (p: Oauth2TokenTestPeer, over: Record<string, unknown> = {}) =>
    ({ kind: "oauth2ClientCredentials", tokenUrl: p.tokenUrl, clientId: p.clientId, clientSecret: p.clientSecret, ...over });
  const startFleet = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const r = createRelay({ db: await fleet.dbForRelay(), transport, retryPolicy: FAST, pollIntervalMs: 20 });
      fleet.relays.push(r);
      await r.start();
    }
  };
  const delivered = (ids: string[]) => async () => {
    for (const id of ids) if ((await getDelivery(ctx.db, id)).status !== "delivered") return false;
    return true;
  };

  it("four relays on one database fetch one token per expiry; every delivery carries a live token", async () => {
    // Refreshed 2 s before it lapses (a fifth): room for a request delayed by this loaded machine
    // (on PGlite the four relays, the receiver and the token endpoint share one event loop).
    peer = await startOauth2TokenTestPeer({ expiresIn: 10 });
    const answers = await gatedReceiver(peer);
    const sub = await createSubscription(ctx.db, {
      url: receiver!.url, eventTypes: ["*"], auth: oauth2(peer, { scope: "webhooks:write", audience: "https://receiver.example" }),
    });
    await startFleet(4);
    // More than one token lifetime of traffic, spread so every relay needs a token in each.
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      await enqueue(ctx.db, { id: `e${i}`, type: "x.y", data: { i } });
      ids.push(`e${i}:${sub.id}`);
      await sleep(250);
    }
    await waitFor("all delivered", delivered(ids), 60_000);

    expect(answers.filter((a) => a.status !== 200), JSON.stringify(peer.issued)).toEqual([]);
    expect(peer.issued.length).toBeGreaterThanOrEqual(2);
    // One fetch per expiry: each token was fetched only once the one before was due for refresh
    // (four relays fetching on their own would have fetched several within one lifetime).
    for (let i = 1; i < peer.issued.length; i++) {
      expect(peer.issued[i]!.at - peer.issued[i - 1]!.at).toBeGreaterThanOrEqual(8000 - 50);
    }
    // Every token fetched was used, and the requests were the configured ones.
    expect(new Set(answers.map((a) => a.authorization)).size).toBe(peer.issued.length);
    expect(peer.requests.map((r) => ({ accepted: r.accepted, scope: r.scope, audience: r.audience })))
      .toEqual(peer.issued.map(() => ({ accepted: true, scope: "webhooks:write", audience: "https://receiver.example" })));
    for (const id of ids) expect((await getDelivery(ctx.db, id)).attempts).toBe(1);
  }, 120_000);

  it("a token revoked before its expiry: the 401 refreshes it once for all four relays, and each delivery goes on its first attempt", async () => {
    peer = await startOauth2TokenTestPeer({ expiresIn: 3600 });
    const answers = await gatedReceiver(peer);
    const sub = await createSubscription(ctx.db, { url: receiver!.url, eventTypes: ["*"], auth: oauth2(peer) });
    await startFleet(4);
    // Every relay gets the first token (into its memory) before it is revoked.
    const warm: string[] = [];
    for (let i = 0; i < 12; i++) {
      await enqueue(ctx.db, { id: `warm${i}`, type: "x.y", data: {} });
      warm.push(`warm${i}:${sub.id}`);
    }
    await waitFor("warm-up delivered", delivered(warm), 30_000);
    expect(peer.issued).toHaveLength(1);
    const first = peer.issued[0]!.token;
    peer.revoke(first);

    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      await enqueue(ctx.db, { id: `after${i}`, type: "x.y", data: {} });
      ids.push(`after${i}:${sub.id}`);
    }
    await waitFor("delivered after the revocation", delivered(ids), 30_000);
    expect(peer.issued).toHaveLength(2);
    const second = peer.issued[1]!.token;
    for (const id of ids) {
      const mine = answers.filter((a) => a.webhookId === id);
      // At most one refusal with the revoked token, then the new one; never two refusals.
      expect(mine.at(-1)).toEqual({ webhookId: id, authorization: `Bearer ${second}`, status: 200 });
      expect(mine.filter((a) => a.status === 401).every((a) => a.authorization === `Bearer ${first}`)).toBe(true);
      expect(mine.length).toBeLessThanOrEqual(2);
      expect((await getDelivery(ctx.db, id)).attempts).toBe(1);
      expect(await listAttempts(ctx.db, id)).toMatchObject([{ result: "delivered", status: 200 }]);
    }
    expect(answers.some((a) => a.status === 401)).toBe(true);
  }, 60_000);

  it("a token endpoint that is down: the attempts are retryable (asked once, not once per delivery), logged, and delivered once it is back", async () => {
    peer = await startOauth2TokenTestPeer();
    await gatedReceiver(peer);
    const sub = await createSubscription(ctx.db, { url: receiver!.url, eventTypes: ["*"], auth: oauth2(peer) });
    peer.down = true;
    // The failure is held (on the shared row) for 2 s: longer than the pass's five attempts take.
    const holding = createEndpointAuth({ db: ctx.db, transport, tokens: createTokenCache({ db: ctx.db, transport, failureHoldSeconds: { retryable: 2, permanent: 2 } }) });
    // Retries about every second, enough of them to outlast the hold.
    relay = createRelay({ db: ctx.db, transport, retryPolicy: { baseSeconds: 0.5, capSeconds: 1, maxAttempts: 30, retryAfterCapSeconds: 2 }, pollIntervalMs: 20, endpointAuth: holding });
    for (let i = 0; i < 5; i++) await enqueue(ctx.db, { id: `down${i}`, type: "x.y", data: {} });
    expect(await relay.runOnce()).toBe(5);
    expect(peer.requests.map((r) => r.status)).toEqual([503]); // the failure was held for the other four
    expect(receiver!.received).toHaveLength(0);
    for (let i = 0; i < 5; i++) {
      const id = `down${i}:${sub.id}`;
      expect(await getDelivery(ctx.db, id)).toMatchObject({ status: "pending", attempts: 1 });
      const [attempt] = await listAttempts(ctx.db, id);
      expect(attempt).toMatchObject({ result: "retryable", status: null, errorClass: "auth_token_unavailable" });
      expect(attempt!.responseExcerpt).toMatch(/token endpoint http:\/\/127\.0\.0\.1:\d+\/token answered 503/);
      expect(attempt!.responseExcerpt).not.toContain(peer.clientSecret);
    }

    // Back up: once the hold has run out, the next attempts get a token.
    peer.down = false;
    await relay.start();
    const ids = Array.from({ length: 5 }, (_, i) => `down${i}:${sub.id}`);
    await waitFor("delivered once the token endpoint is back", delivered(ids), 20_000);
    expect(peer.issued).toHaveLength(1);
    for (const id of ids) {
      const results = (await listAttempts(ctx.db, id)).map((a) => a.result);
      // Retried (while the hold lasted, with the held failure) until delivered.
      expect(results.at(-1)).toBe("delivered");
      expect(results.slice(0, -1).every((r) => r === "retryable")).toBe(true);
    }
  }, 60_000);

  it("a token endpoint refusing connections is retryable too (connection refused, in the attempt log)", async () => {
    peer = await startOauth2TokenTestPeer();
    await gatedReceiver(peer);
    const sub = await createSubscription(ctx.db, { url: receiver!.url, eventTypes: ["*"], auth: oauth2(peer) });
    await peer.close();
    relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST });
    await enqueue(ctx.db, { id: "refused", type: "x.y", data: {} });
    expect(await relay.runOnce()).toBe(1);
    const [attempt] = await listAttempts(ctx.db, `refused:${sub.id}`);
    expect(attempt).toMatchObject({ result: "retryable", status: null, errorClass: "auth_token_unavailable" });
    expect(attempt!.responseExcerpt).toMatch(/did not answer \(connection_refused\)/);
    expect(await getDelivery(ctx.db, `refused:${sub.id}`)).toMatchObject({ status: "pending" });
  });

  it("a wrong client secret: dead-lettered at once as a misconfiguration (invalid_client in the log); fixed and replayed, delivered", async () => {
    peer = await startOauth2TokenTestPeer();
    await gatedReceiver(peer);
    const wrong = "wrong-secret-5f3a9c";
    const sub = await createSubscription(ctx.db, { url: receiver!.url, eventTypes: ["*"], auth: oauth2(peer, { clientSecret: wrong }) });
    relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST });
    for (let i = 0; i < 3; i++) await enqueue(ctx.db, { id: `bad${i}`, type: "x.y", data: {} });
    expect(await relay.runOnce()).toBe(3);
    expect(peer.requests.map((r) => [r.status, r.accepted])).toEqual([[401, false]]);
    expect(receiver!.received).toHaveLength(0);
    for (let i = 0; i < 3; i++) {
      const id = `bad${i}:${sub.id}`;
      expect(await getDelivery(ctx.db, id)).toMatchObject({ status: "dead", attempts: 1 });
      const [attempt] = await listAttempts(ctx.db, id);
      expect(attempt).toMatchObject({ result: "permanent", status: null, errorClass: "auth_token_rejected" });
      expect(attempt!.responseExcerpt).toContain("invalid_client");
      expect(attempt!.responseExcerpt).not.toContain(wrong);
    }
    // The operator corrects the secret (a new configuration: the held rejection does not apply) and replays.
    await updateSubscription(ctx.db, sub.id, { auth: oauth2(peer) });
    for (let i = 0; i < 3; i++) await replayDeadLetter(ctx.db, `bad${i}:${sub.id}`);
    await waitFor("replayed and delivered", async () => { await relay!.runOnce(); return delivered([0, 1, 2].map((i) => `bad${i}:${sub.id}`))(); }, 20_000);
    expect(receiver!.received).toHaveLength(3);
    expect(peer.issued).toHaveLength(1);
  });

  it("the token URL passes the destination policy; the secret is never answered; bad input gets a precise error", async () => {
    const policy = createDestinationPolicy({ allowed: [] });
    await expect(createSubscription(ctx.db, {
      url: "https://receiver.example/hooks", eventTypes: ["*"],
      auth: { kind: "oauth2ClientCredentials", tokenUrl: "http://169.254.169.254/token", clientId: "c", clientSecret: "s" },
    }, { destinationPolicy: policy })).rejects.toThrow(/auth\.tokenUrl: .*169\.254\.169\.254/);
    // At delivery the transport's policy applies to the token request as to the endpoint.
    const strict = createTransport({ allowedDestinations: [] });
    try {
      const result = await requestToken(strict, { kind: "oauth2ClientCredentials", version: "v", tokenUrl: "http://127.0.0.1:9/token", clientId: "c", clientSecret: "s", scope: null, audience: null, parameters: {}, clientAuthentication: "basic" });
      expect(result).toMatchObject({ ok: false, errorClass: "auth_token_destination_refused", retryable: false });
    } finally {
      await strict.close();
    }

    await expect(createSubscription(ctx.db, { url: "https://receiver.example/hooks", eventTypes: ["*"], auth: { kind: "oauth2ClientCredentials", tokenUrl: "https://a.example/token", clientId: "c" } }))
      .rejects.toThrow(/auth\.clientSecret/);
    await expect(createSubscription(ctx.db, { url: "https://receiver.example/hooks", eventTypes: ["*"], auth: { kind: "kerberos" } }))
      .rejects.toThrow(/auth\.kind/);
    await expect(createSubscription(ctx.db, { url: "https://receiver.example/hooks", eventTypes: ["*"], auth: { kind: "basic", username: "a:b", password: "p" } }))
      .rejects.toThrow(/auth\.username: must be printable ASCII without a colon/);

    const secret = "answered-never-91d2";
    const sub = await createSubscription(ctx.db, {
      url: "https://receiver.example/hooks", eventTypes: ["*"],
      auth: { kind: "oauth2ClientCredentials", tokenUrl: "https://auth.example/token", clientId: "client-1", clientSecret: secret, parameters: { resource: "r1" } },
    });
    expect(sub.auth).toEqual({ kind: "oauth2ClientCredentials", tokenUrl: "https://auth.example/token", clientId: "client-1", scope: null, audience: null, parameters: { resource: "r1" }, clientAuthentication: "basic" });
    expect(JSON.stringify(sub)).not.toContain(secret);
    expect(JSON.stringify(await getSubscription(ctx.db, sub.id, { includeSecrets: true }))).not.toContain(secret);
    const basic = await updateSubscription(ctx.db, sub.id, { auth: { kind: "basic", username: "u", password: secret } });
    expect(basic.auth).toEqual({ kind: "basic", username: "u" });
    expect(JSON.stringify(basic)).not.toContain(secret);
    expect((await updateSubscription(ctx.db, sub.id, { auth: null })).auth).toBeNull();
  });

  it("basic: sent as Authorization: Basic; a rotated password loses no delivery (a 401 re-reads the configuration at once)", async () => {
    let accepted = "Basic " + Buffer.from("relay:first-pass").toString("base64");
    receiver = await startReceiver((r) => ({ status: r.headers.authorization === accepted ? 200 : 401 }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"], headers: { authorization: "overridden" }, auth: { kind: "basic", username: "relay", password: "first-pass" } });
    relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST });
    await enqueue(ctx.db, { id: "b1", type: "x.y", data: {} });
    expect(await relay.runOnce()).toBe(1);
    expect(await getDelivery(ctx.db, `b1:${sub.id}`)).toMatchObject({ status: "delivered", attempts: 1 });

    // Rotated at the receiver and here together; this relay still holds the old configuration (read < 5 s ago).
    await updateSubscription(ctx.db, sub.id, { auth: { kind: "basic", username: "relay", password: "second-pass" } });
    accepted = "Basic " + Buffer.from("relay:second-pass").toString("base64");
    await enqueue(ctx.db, { id: "b2", type: "x.y", data: {} });
    expect(await relay.runOnce()).toBe(1);
    expect(await getDelivery(ctx.db, `b2:${sub.id}`)).toMatchObject({ status: "delivered", attempts: 1 });
    expect(receiver.received.filter((r) => r.webhookId === `b2:${sub.id}`).map((r) => r.headers.authorization))
      .toEqual(["Basic " + Buffer.from("relay:first-pass").toString("base64"), accepted]);

    // A password the receiver does not take: 401 is permanent, as for any endpoint.
    accepted = "nothing";
    await enqueue(ctx.db, { id: "b3", type: "x.y", data: {} });
    expect(await relay.runOnce()).toBe(1);
    expect(await getDelivery(ctx.db, `b3:${sub.id}`)).toMatchObject({ status: "dead", attempts: 1 });
  });
});
