/**
 * Issue 17, Must-show 2 (second half): rotating the encryption key loses no delivery. Two relays
 * deliver a steady stream of events to three subscriptions while the key is rotated the documented
 * way: a new key put first in ENCRYPTION_KEYS, the re-encryption pass rewriting every value under
 * it, then the old key dropped. Every event arrives at every subscription, verifies with its
 * signing secret, once per delivery, and nothing is dead-lettered or deferred. Both backends.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { useKeyring } from "../../shared/crypto/activeKeyring.js";
import { parseEncryptionKeys } from "../../shared/crypto/keyring.js";
import { reencryptSecrets, secretsByKey } from "../../shared/crypto/reencrypt.js";
import { createRelay, createSubscription, enqueue, listDeadLetters, type Relay, type Subscription } from "../../shared/outbound/index.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, startReceiver, waitFor, type Receiver } from "../outbound/support/receiver.js";

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

    await waitFor("every delivery", () => new Set(receiver.received.map((r) => r.webhookId)).size === EVENTS * 3, 60_000);
    for (const r of receiver.received) {
      const sub = subs.find((s) => r.webhookId.endsWith(`:${s.id}`))!;
      new Webhook(sub.secrets![0]!).verify(r.body, r.headers as Record<string, string>); // throws if not
      expect(r.headers["x-api-key"]).toBe(`key-${subs.indexOf(sub)}`);
    }
    // The receiver answered; the relays write the outcomes in batches just after.
    await waitFor("every outcome written", async () => (await ctx.db.query("SELECT 1 FROM outbound_deliveries WHERE status = 'pending'")).rows.length === 0);
    expect(await listDeadLetters(ctx.db)).toHaveLength(0);
    // None waited for a key: each delivery was attempted once, and delivered.
    const { rows } = await ctx.db.query<{ status: string; attempts: number; n: string }>(
      "SELECT status, attempts, count(*) AS n FROM outbound_deliveries GROUP BY status, attempts",
    );
    expect(rows.map((r) => ({ ...r, n: Number(r.n) }))).toEqual([{ status: "delivered", attempts: 1, n: EVENTS * 3 }]);
  }, 120_000);
});
