/**
 * Issue 17, Must-show 2: after a run (subscriptions created, edited, rotated; forwarding and alert
 * subscriptions; deliveries made and verified), no raw database row holds a secret in clear: every
 * column of every table is read as text and searched for `whsec_`, each secret, each header value
 * and the encryption key's bytes. Issue 29, Must-show 4: the same for every endpoint auth kind's
 * secret part (OAuth 2.0 client secret, mTLS private key, Basic password, before and after a
 * rotation) and the OAuth 2.0 access token the relays cache, in the rows and the PGlite files; a
 * password written in clear is sealed by the re-encryption pass. Also: plaintext rows from before are sealed by the pass at start;
 * a value under a key this process lacks waits (pending, uncounted) and is delivered once the key is
 * back; a value copied into another row does not decrypt there. Both backends.
 */
import { readdir, readFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.js";
import { verifyWebhook } from "../../shared/inbound/verify/index.js";
import { useKeyring } from "../../shared/crypto/activeKeyring.js";
import { parseEncryptionKeys } from "../../shared/crypto/keyring.js";
import { reencryptSecrets, secretsByKey } from "../../shared/crypto/reencrypt.js";
import type { Queryable } from "../../shared/db/port.js";
import { openPglite } from "../../shared/db/pglite.js";
import { migrate } from "../../shared/db/migrate.js";
import {
  createRelay, createSubscription, enqueue, getDelivery, getSubscription, listDeadLetters, rotateSecrets, updateSubscription, type Relay,
} from "../../shared/outbound/index.js";
import { generateSecret } from "../../shared/outbound/signature.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { startPlatform, type Platform } from "../../shared/platform.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, startReceiver, waitFor, type Receiver } from "../outbound/support/receiver.js";
import { startOauth2TokenTestPeer, type Oauth2TokenTestPeer } from "../support/oauth2TokenTestPeer.js";
import { createTestCa } from "../support/opensslCertificates.js";

/** The parts of a PEM private key that would show it in a row or file: each full base64 line of its body. */
const keyLines = (pem: string) => pem.split("\n").filter((l) => l.length >= 40 && !l.startsWith("-----"));

const TEST_KEYS = process.env.ENCRYPTION_KEYS!;
const testKeyring = parseEncryptionKeys(TEST_KEYS);
const rawKeyForms = (ring = testKeyring) => [...ring.keys.values()].flatMap((k) => [k.key.toString("base64"), k.key.toString("base64url"), k.key.toString("hex")]);

/** Every column of every table in the public schema, each row as JSON text. */
async function everyRow(q: Queryable): Promise<string[]> {
  const { rows: tables } = await q.query<{ name: string }>(
    "SELECT format('%I', table_name) AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
  );
  expect(tables.map((t) => t.name)).toContain("outbound_subscriptions");
  const out: string[] = [];
  for (const t of tables) {
    const { rows } = await q.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM ${t.name} t`);
    out.push(...rows.map((r) => `${t.name}: ${r.row}`));
  }
  return out;
}

/** The needles that must appear in no row: each secret whole and its key part, each header value, the key bytes. */
function needles(secrets: readonly string[], headerValues: readonly string[]): string[] {
  return ["whsec_", "whsk_", ...secrets, ...secrets.map((s) => s.replace(/^wh(sec|sk)_/, "")), ...headerValues, ...rawKeyForms()];
}

function expectNoPlaintext(rows: readonly string[], search: readonly string[]): void {
  const found = search.flatMap((n) => rows.filter((r) => r.includes(n)).map((r) => `${n} in ${r.slice(0, 120)}`));
  expect(found).toEqual([]);
}

const verifies = (secrets: readonly string[], body: string, headers: Record<string, unknown>) =>
  secrets.some((s) => {
    try {
      new Webhook(s).verify(body, headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  });

describeEachBackend("secrets at rest", (ctx) => {
  let receiver: Receiver;
  let platform: Platform | undefined;
  let relay: Relay | undefined;
  let transport: Transport;
  let peer: Oauth2TokenTestPeer | undefined;

  beforeAll(() => { transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 }); });
  afterAll(() => transport?.close());
  afterEach(async () => {
    useKeyring(undefined); // back to ENCRYPTION_KEYS
    await relay?.stop();
    relay = undefined;
    await platform?.stop();
    platform = undefined;
    await receiver?.close();
    await peer?.close();
    peer = undefined;
    await resetOutbound(ctx.db);
    await ctx.db.query("DELETE FROM outbound_auth_tokens");
  });

  it("after a run, no raw row of any table holds a secret, a header value or the key in clear", async () => {
    receiver = await startReceiver();
    const alertSecret = generateSecret();
    const forwardSecret = generateSecret();
    const partnerSecret = generateSecret();
    const config = loadConfig({
      ALLOWED_DESTINATIONS: "127.0.0.1", OUTBOUND_POLL_INTERVAL_MS: "20", LOG_LEVEL: "silent",
      ALERT_WEBHOOK_URL: receiver.url, ALERT_WEBHOOK_SECRET: alertSecret,
      PARTNERS: JSON.stringify({ acme: { scheme: "standard-webhooks", secrets: [partnerSecret], forward: { url: receiver.url, secrets: [forwardSecret] } } }),
    });
    platform = await startPlatform(config, { db: ctx.db, handlers: [], logger: createLogger({ level: "silent" }) });

    const a = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["order.*"], headers: { "x-api-key": "api-key-value-a1b2c3" } });
    const given = [generateSecret(), generateSecret()];
    const b = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["order.*"], secrets: given });
    const c = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["order.*"], signatureScheme: "v1a" });
    const rotated = await rotateSecrets(ctx.db, a.id);
    await updateSubscription(ctx.db, b.id, { headers: { authorization: "Bearer token-d4e5f6" } });
    // Endpoint authentication of every kind (issue 29): its secret parts, and the OAuth 2.0 token cached for the relays.
    peer = await startOauth2TokenTestPeer({ clientSecret: "client-secret-a7b8c9d0" });
    const client = createTestCa().client("relay-client");
    await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["auth.*"], auth: { kind: "oauth2ClientCredentials", tokenUrl: peer.tokenUrl, clientId: peer.clientId, clientSecret: peer.clientSecret } });
    await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["auth.*"], auth: { kind: "mtls", certificate: client.cert, privateKey: client.key } });
    const basic = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["auth.*"], auth: { kind: "basic", username: "relay", password: "first-password-e1f2" } });
    await updateSubscription(ctx.db, basic.id, { auth: { kind: "basic", username: "relay", password: "rotated-password-g3h4" } });
    for (let i = 0; i < 5; i++) await enqueue(ctx.db, { id: `run-${i}`, type: "order.paid", data: { i } });
    for (let i = 0; i < 2; i++) await enqueue(ctx.db, { id: `auth-${i}`, type: "auth.checked", data: { i } });

    await waitFor("15 deliveries", () => receiver.received.filter((r) => r.webhookId.startsWith("run-")).length === 15);
    await waitFor("6 deliveries with auth", () => receiver.received.filter((r) => r.webhookId.startsWith("auth-")).length === 6);
    const accessToken = peer.issued[0]!.token;
    expect(receiver.received.filter((r) => r.headers.authorization === `Bearer ${accessToken}`)).toHaveLength(2);
    expect(receiver.received.filter((r) => r.headers.authorization === `Basic ${Buffer.from("relay:rotated-password-g3h4").toString("base64")}`)).toHaveLength(2);
    await waitFor("the token cached for the relays", async () => (await ctx.db.query("SELECT 1 FROM outbound_auth_tokens WHERE token IS NOT NULL")).rows.length === 1);
    for (const r of receiver.received.filter((x) => x.webhookId.startsWith("run-"))) {
      if (r.webhookId.endsWith(c.id)) {
        expect(verifyWebhook({ name: "c", scheme: "standard-webhooks", secrets: c.publicKeys! }, r.headers as Record<string, string>, Buffer.from(r.body), Math.floor(Date.now() / 1000)).ok).toBe(true);
        continue;
      }
      const sub = r.webhookId.endsWith(a.id) ? rotated : b;
      expect(verifies(sub.secrets!, r.body, r.headers)).toBe(true);
      // Decrypted for the request: the receiver gets the values it was given.
      if (sub.id === a.id) expect(r.headers["x-api-key"]).toBe("api-key-value-a1b2c3");
      else expect(r.headers.authorization).toBe("Bearer token-d4e5f6");
    }
    await waitFor("the alert subscription", async () => (await ctx.db.query("SELECT 1 FROM outbound_subscriptions WHERE event_types = ARRAY['alert.*', 'endpoint.*', 'auth.*', 'encryption_key.*', 'delivery.*', 'inbox.*']")).rows.length === 1);
    // The API still answers in clear.
    expect((await getSubscription(ctx.db, a.id, { includeSecrets: true })).secrets).toEqual(rotated.secrets);
    expect((await getSubscription(ctx.db, b.id)).headers).toEqual({ authorization: "Bearer token-d4e5f6" });

    const secrets = [...a.secrets!, ...rotated.secrets!, ...given, ...c.secrets!, alertSecret, forwardSecret];
    const authSecrets = ["client-secret-a7b8c9d0", "first-password-e1f2", "rotated-password-g3h4", accessToken, ...keyLines(client.key)];
    expect(keyLines(client.key).length).toBeGreaterThan(0);
    expectNoPlaintext(await everyRow(ctx.db), needles(secrets, ["api-key-value-a1b2c3", "token-d4e5f6", ...authSecrets]));
    const byKey = await secretsByKey(ctx.db);
    expect(Object.keys(byKey)).toEqual([testKeyring.primary.id]);
  });

  it("plaintext rows written before encryption keep delivering and are sealed by the pass at the relay's start", async () => {
    receiver = await startReceiver();
    const legacy = generateSecret();
    // Its auth's password in clear too (written by hand, or by code older than the sealing).
    await ctx.db.query(
      `INSERT INTO outbound_subscriptions (id, url, event_types, secrets, headers, auth) VALUES ('sub_legacy', $1, ARRAY['*'], ARRAY[$2], '{"x-legacy":"legacy-value-778899"}'::jsonb,
        '{"kind":"basic","version":"v0","username":"old","password":"legacy-password-5566"}'::jsonb)`,
      [receiver.url, legacy],
    );
    expect(await secretsByKey(ctx.db)).toEqual({ plaintext: 3 });
    platform = await startPlatform(loadConfig({ ALLOWED_DESTINATIONS: "127.0.0.1", OUTBOUND_POLL_INTERVAL_MS: "20", LOG_LEVEL: "silent" }), {
      db: ctx.db, handlers: [], logger: createLogger({ level: "silent" }),
    });
    await waitFor("the pass sealed the row", async () => (await secretsByKey(ctx.db)).plaintext === undefined);
    expectNoPlaintext(await everyRow(ctx.db), needles([legacy], ["legacy-value-778899", "legacy-password-5566"]));
    await enqueue(ctx.db, { id: "after-pass", type: "x.y", data: {} });
    await waitFor("delivered", () => receiver.received.length === 1);
    expect(verifies([legacy], receiver.received[0]!.body, receiver.received[0]!.headers)).toBe(true);
    expect(receiver.received[0]!.headers["x-legacy"]).toBe("legacy-value-778899");
    expect(receiver.received[0]!.headers.authorization).toBe(`Basic ${Buffer.from("old:legacy-password-5566").toString("base64")}`);
  });

  it("a value under a key this process lacks: the delivery waits (pending, uncounted, an error naming the key), then goes once the key is back", async () => {
    receiver = await startReceiver();
    const ghost = parseEncryptionKeys(`ghost:${Buffer.alloc(32, 5).toString("base64")}`);
    useKeyring(ghost);
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    useKeyring(testKeyring); // "ghost" dropped too early
    await enqueue(ctx.db, { id: "waits", type: "x.y", data: {} });
    const logs: string[] = [];
    const logger = pino({ level: "error" }, { write: (line: string) => { logs.push(line); } });
    relay = createRelay({ db: ctx.db, transport, logger, pollIntervalMs: 20 });
    expect(await relay.runOnce()).toBe(1);
    expect(receiver.received).toHaveLength(0);
    const waiting = await getDelivery(ctx.db, `waits:${sub.id}`);
    expect(waiting).toMatchObject({ status: "pending", attempts: 0 });
    expect(new Date(waiting.nextAttemptAt!).getTime()).toBeGreaterThan(Date.now() + 30_000);
    expect(await listDeadLetters(ctx.db)).toHaveLength(0);
    expect(logs.join("\n")).toMatch(/key id \\"ghost\\", which is not in ENCRYPTION_KEYS/);
    await expect(getSubscription(ctx.db, sub.id, { includeSecrets: true })).rejects.toThrow(/key id "ghost"/);
    expect((await reencryptSecrets(ctx.db)).unreadable).toEqual([{ id: sub.id, error: expect.stringContaining('"ghost"') }]);

    useKeyring(parseEncryptionKeys(`${TEST_KEYS},ghost:${Buffer.alloc(32, 5).toString("base64")}`));
    await ctx.db.query("UPDATE outbound_deliveries SET next_attempt_at = now()"); // not a minute's wait in a test
    expect(await relay.runOnce()).toBe(1);
    expect(receiver.received).toHaveLength(1);
    expect(verifies(sub.secrets!, receiver.received[0]!.body, receiver.received[0]!.headers)).toBe(true);
    expect(await getDelivery(ctx.db, `waits:${sub.id}`)).toMatchObject({ status: "delivered", attempts: 1 });
  });

  it("secrets copied into another subscription's row do not decrypt there: its delivery waits, unsent", async () => {
    receiver = await startReceiver();
    const a = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    const b = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await ctx.db.query("UPDATE outbound_subscriptions SET secrets = (SELECT secrets FROM outbound_subscriptions WHERE id = $1) WHERE id = $2", [a.id, b.id]);
    await enqueue(ctx.db, { id: "swap", type: "x.y", data: {} });
    // The running loop this time (the test above used a pass, runOnce): the same path back.
    relay = createRelay({ db: ctx.db, transport, pollIntervalMs: 20 });
    await relay.start();
    await waitFor("a's delivery", () => receiver.received.length === 1);
    await waitFor("b's delivery put back", async () => {
      const d = await getDelivery(ctx.db, `swap:${b.id}`);
      return d.status === "pending" && d.attempts === 0 && new Date(d.nextAttemptAt!).getTime() > Date.now() + 30_000;
    });
    expect(receiver.received.map((r) => r.webhookId)).toEqual([`swap:${a.id}`]);
    await expect(getSubscription(ctx.db, b.id, { includeSecrets: true })).rejects.toThrow(/copied from another row/);
  });
});

it("the embedded database's files on disk hold no secret in clear after a run", async () => {
  const dir = await mkdtemp(join(tmpdir(), "pglite-at-rest-"));
  const db = await openPglite(dir);
  await migrate(db);
  const secret = generateSecret();
  await createSubscription(db, { url: "https://receiver.example/hooks", eventTypes: ["*"], secrets: [secret], headers: { "x-api-key": "file-level-key-123456" } });
  // Every auth kind's secret part (issue 29).
  const client = createTestCa().client("relay-client");
  await createSubscription(db, { url: "https://receiver.example/hooks", eventTypes: ["*"], auth: { kind: "oauth2ClientCredentials", tokenUrl: "https://auth.example/token", clientId: "c", clientSecret: "file-client-secret-778" } });
  await createSubscription(db, { url: "https://receiver.example/hooks", eventTypes: ["*"], auth: { kind: "mtls", certificate: client.cert, privateKey: client.key } });
  await createSubscription(db, { url: "https://receiver.example/hooks", eventTypes: ["*"], auth: { kind: "basic", username: "u", password: "file-password-990" } });
  await enqueue(db, { id: "e1", type: "x.y", data: {} });
  await db.query("CHECKPOINT");
  await db.close();
  const hits: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const entry of await readdir(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) await walk(path);
      else {
        const bytes = await readFile(path);
        for (const n of ["whsec_", secret.slice(6), "file-level-key-123456", "file-client-secret-778", "file-password-990", ...keyLines(client.key), ...rawKeyForms()]) if (bytes.includes(n)) hits.push(`${n} in ${path}`);
      }
    }
  };
  await walk(dir);
  expect(hits).toEqual([]);
}, 120_000);
