/**
 * Issue 17, Must-show 2 (second half): rotating the encryption key loses no delivery. Two relays
 * deliver a steady stream of events to three subscriptions while the key is rotated the documented
 * way: a new key put first in ENCRYPTION_KEYS, the re-encryption pass rewriting every value under
 * it, then the old key dropped. Every event arrives at every subscription, verifies with its
 * signing secret, once per delivery, and nothing is dead-lettered or deferred. Both backends.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { useKeyring } from "../../shared/crypto/activeKeyring.js";
import { parseEncryptionKeys } from "../../shared/crypto/keyring.js";
import { reencryptSecrets, secretsByKey } from "../../shared/crypto/reencrypt.js";
import { createRelay, createSubscription, enqueue, listDeadLetters, type Relay, type Subscription } from "../../shared/outbound/index.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { loadConfig } from "../../shared/config.js";
import { mapPlatformError, startPlatform, type Platform } from "../../shared/platform.js";
import { createHttpServer } from "../../shared/server/router.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, startReceiver, waitFor, type Receiver } from "../outbound/support/receiver.js";
import { startOauth2TokenTestPeer } from "../support/oauth2TokenTestPeer.js";

const OLD = `old:${Buffer.alloc(32, 11).toString("base64")}`;
const NEW = `new:${Buffer.alloc(32, 22).toString("base64")}`;
const EVENTS = 90;

describeEachBackend("encryption key rotation", (ctx) => {
  let receiver: Receiver;
  let relays: Relay[] = [];
  let transport: Transport;

  beforeAll(() => { transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 }); });
  afterAll(() => transport?.close());
  afterEach(async () => {
    await Promise.all(relays.map((r) => r.stop()));
    relays = [];
    useKeyring(undefined);
    await receiver?.close();
    await resetOutbound(ctx.db);
  });

  it("a new key first, the pass, then the old key dropped, while two relays deliver: every delivery arrives and verifies", async () => {
    receiver = await startReceiver();
    useKeyring(parseEncryptionKeys(OLD));
    const subs: Subscription[] = [];
    for (let i = 0; i < 3; i++) subs.push(await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"], headers: { "x-api-key": `key-${i}` } }));
    expect(await secretsByKey(ctx.db)).toEqual({ old: 6 });
    relays = [0, 1].map(() => createRelay({ db: ctx.db, transport, pollIntervalMs: 10 }));
    for (const r of relays) await r.start();

    let sent = 0;
    const send = async (n: number) => {
      for (const end = sent + n; sent < end; sent++) {
        await enqueue(ctx.db, { id: `rot-${sent}`, type: "x.y", data: { n: sent } });
        await new Promise((ok) => setTimeout(ok, 5));
      }
    };
    await send(EVENTS / 3);
    // Rotation, step 1: the new key first (every process gets the new list), the pass while deliveries go on.
    useKeyring(parseEncryptionKeys(`${NEW},${OLD}`));
    const [pass] = await Promise.all([reencryptSecrets(ctx.db, { batchSize: 1 }), send(EVENTS / 3)]);
    expect(pass).toMatchObject({ rewritten: 3, unreadable: [] });
    expect(await secretsByKey(ctx.db)).toEqual({ new: 6 });
    // Step 2: nothing is left under "old": it is dropped.
    useKeyring(parseEncryptionKeys(NEW));
    await send(EVENTS / 3);

    await waitFor("every delivery", () => new Set(receiver.received.map((r) => r.webhookId)).size === EVENTS * 3, 45_000);
    for (const r of receiver.received) {
      const sub = subs.find((s) => r.webhookId.endsWith(`:${s.id}`))!;
      new Webhook(sub.secrets![0]!).verify(r.body, r.headers as Record<string, string>); // throws if not
      expect(r.headers["x-api-key"]).toBe(`key-${subs.indexOf(sub)}`);
    }
    // The receiver answered; the relays write the outcomes in batches just after.
    await waitFor("every outcome written", async () => (await ctx.db.query("SELECT 1 FROM outbound_deliveries WHERE status = 'pending'")).rows.length === 0);
    expect(await listDeadLetters(ctx.db)).toHaveLength(0);
    // Every delivery delivered. None waited for a key: a deferral puts it off 60 s, past the wait
    // above (45 s). An attempt may have failed on this busy machine (a timeout: retried), but
    // never for its signature (invalid_request).
    const { rows } = await ctx.db.query<{ status: string; n: string }>("SELECT status, count(*) AS n FROM outbound_deliveries GROUP BY status");
    expect(rows.map((r) => ({ ...r, n: Number(r.n) }))).toEqual([{ status: "delivered", n: EVENTS * 3 }]);
    const { rows: failed } = await ctx.db.query<{ error_class: string | null }>("SELECT DISTINCT error_class FROM outbound_attempts WHERE result <> 'delivered'");
    expect(failed.map((f) => f.error_class)).not.toContain("invalid_request");
  }, 120_000);

  it("endpoint auth's secret parts are rewritten by the pass too, and the cached OAuth 2.0 token under the old key is dropped and fetched again (issue 29)", async () => {
    const peer = await startOauth2TokenTestPeer();
    try {
      receiver = await startReceiver((r) => ({ status: r.headers.authorization === `Basic ${Buffer.from("relay:pw-rot").toString("base64")}` || peer.accepts(r.headers.authorization) ? 200 : 401 }));
      useKeyring(parseEncryptionKeys(OLD));
      const basic = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"], auth: { kind: "basic", username: "relay", password: "pw-rot" } });
      const oauth = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"], auth: { kind: "oauth2ClientCredentials", tokenUrl: peer.tokenUrl, clientId: peer.clientId, clientSecret: peer.clientSecret } });
      const relay = createRelay({ db: ctx.db, transport });
      relays = [relay];
      await enqueue(ctx.db, { id: "auth-before", type: "x.y", data: {} });
      expect(await relay.runOnce()).toBe(2);
      // Signing secrets (2), the password, the client secret and the cached token.
      expect(await secretsByKey(ctx.db)).toEqual({ old: 5 });

      useKeyring(parseEncryptionKeys(`${NEW},${OLD}`));
      expect(await reencryptSecrets(ctx.db)).toMatchObject({ rewritten: 2, unreadable: [] });
      expect(await secretsByKey(ctx.db)).toEqual({ new: 4 }); // the token dropped, not rewritten
      useKeyring(parseEncryptionKeys(NEW));
      await enqueue(ctx.db, { id: "auth-after", type: "x.y", data: {} });
      // A new relay (this one holds the old token in memory, as a running process would until its refresh).
      const fresh = createRelay({ db: ctx.db, transport });
      relays.push(fresh);
      expect(await fresh.runOnce()).toBe(2);
      for (const sub of [basic, oauth]) {
        expect((await ctx.db.query("SELECT status FROM outbound_deliveries WHERE id = $1", [`auth-after:${sub.id}`])).rows).toEqual([{ status: "delivered" }]);
      }
      expect(peer.issued).toHaveLength(2);
      expect(await secretsByKey(ctx.db)).toEqual({ new: 5 });
    } finally {
      await peer.close();
      await ctx.db.query("DELETE FROM outbound_auth_tokens");
    }
  });
});

describeEachBackend("encryption key status and pass over the API", (ctx) => {
  const TOKEN = "encryption-keys-api-test-token";
  let platform: Platform;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    platform = await startPlatform(loadConfig({ ADMIN_TOKEN: TOKEN, LOG_LEVEL: "silent" }), { db: ctx.db, logger: createLogger({ level: "silent" }), workers: false });
    server = createHttpServer({ routes: platform.routes, adminToken: TOKEN, maxBodyBytes: 64 * 1024, mapError: mapPlatformError });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await platform.stop();
  });
  afterEach(async () => {
    useKeyring(undefined);
    await resetOutbound(ctx.db);
  });
  const call = async (method: string, path: string) => {
    const res = await fetch(base + path, { method, headers: { authorization: `Bearer ${TOKEN}` } });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  it("GET /encryption-keys says where a rotation stands (ids, never bytes); POST /encryption-keys/reencrypt finishes it", async () => {
    useKeyring(parseEncryptionKeys(OLD));
    await createSubscription(ctx.db, { url: "https://receiver.example/hooks", eventTypes: ["*"], headers: { "x-api-key": "k" } });
    useKeyring(parseEncryptionKeys(`${NEW},${OLD}`));
    const before = await call("GET", "/encryption-keys");
    expect(before).toEqual({ status: 200, body: { primaryKeyId: "new", keyIds: ["new", "old"], values: { old: 2 }, rotated: false } });
    expect(JSON.stringify(before.body)).not.toContain(OLD.split(":")[1]);
    expect(await call("POST", "/encryption-keys/reencrypt")).toEqual({ status: 200, body: { rewritten: 1, skipped: 0, unreadable: [] } });
    expect((await call("GET", "/encryption-keys")).body).toMatchObject({ values: { new: 2 }, rotated: true });
    // Dropped too early: the pass names the key it misses, and the status shows the values still under it.
    useKeyring(parseEncryptionKeys(OLD.replace("old:", "other:")));
    const pass = await call("POST", "/encryption-keys/reencrypt");
    expect(pass.body.unreadable).toEqual([{ id: expect.any(String), error: expect.stringContaining('key id "new"') }]);
    expect((await call("GET", "/encryption-keys")).body).toMatchObject({ primaryKeyId: "other", values: { new: 2 }, rotated: false });
  });
});
