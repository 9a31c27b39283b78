/**
 * Issue 29, Must show 2: mutual TLS against an HTTPS receiver that requires a client certificate
 * signed by its CA (test/outbound/support/tlsReceiver.ts), the certificates made by `openssl` in
 * the test (test/support/opensslCertificates.ts): delivered with the right certificate; refused
 * without one and with a stranger's, each attempt classified (retryable tls/connection error);
 * checked at creation (key matches certificate, not expired, parses); a certificate expiring soon
 * is warned of, and once it has expired the attempts fail as `client_certificate_expired`
 * (dead-lettered, replayable after a new one is set) and the subscription says `expired`.
 * Both backends.
 */
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import {
  createRelay, createSubscription, enqueue, getDelivery, getSubscription, listAttempts, replayDeadLetter, updateSubscription, type Relay,
} from "../../shared/outbound/index.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { describeEachBackend } from "../support/databases.js";
import { createTestCa, type Pem } from "../support/opensslCertificates.js";
import { startTlsReceiver, type TlsReceiver } from "./support/tlsReceiver.js";
import { resetOutbound, waitFor } from "./support/receiver.js";

const FAST = { baseSeconds: 0.05, capSeconds: 0.2, maxAttempts: 3, retryAfterCapSeconds: 2 };

describeEachBackend("endpoint authentication: mutual TLS", (ctx) => {
  let transport: Transport;
  let receiver: TlsReceiver;
  let relay: Relay | undefined;
  let ca: ReturnType<typeof createTestCa>;
  let client: Pem;

  beforeAll(async () => {
    ca = createTestCa();
    client = ca.client("relay-client");
    receiver = await startTlsReceiver({ ...ca.server(), ca: ca.ca });
    transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 });
  }, 60_000);
  afterAll(async () => {
    await transport?.close();
    await receiver?.close();
  });
  afterEach(async () => {
    await relay?.stop();
    relay = undefined;
    receiver.received.length = 0;
    await resetOutbound(ctx.db);
  });

  const mtls = (pem: Pem, withCa = true) => ({ kind: "mtls", certificate: pem.cert, privateKey: pem.key, ...(withCa ? { ca: ca.ca } : {}) });

  it("delivered with the right client certificate; the subscription shows the certificate, never its key", async () => {
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"], auth: mtls(client) });
    expect(sub.auth).toMatchObject({ kind: "mtls", ca: true, certificate: { subject: "CN=relay-client", issuer: "CN=Test CA", expired: false, expiresSoon: true } });
    expect(JSON.stringify(await getSubscription(ctx.db, sub.id, { includeSecrets: true }))).not.toContain(client.key.split("\n")[1]!);
    relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST });
    await enqueue(ctx.db, { id: "m1", type: "x.y", data: {} });
    expect(await relay.runOnce()).toBe(1);
    expect(await getDelivery(ctx.db, `m1:${sub.id}`)).toMatchObject({ status: "delivered", attempts: 1 });
    expect(receiver.received).toEqual([{ webhookId: `m1:${sub.id}`, clientCommonName: "relay-client" }]);
  });

  it("refused with a certificate its CA did not sign, and without one: retryable, classified, nothing received", async () => {
    const stranger = createTestCa("Stranger CA").client("stranger");
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"], auth: mtls(stranger) });
    relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST });
    await enqueue(ctx.db, { id: "m2", type: "x.y", data: {} });
    const refusedBefore = receiver.refusedHandshakes;
    expect(await relay.runOnce()).toBe(1);
    const [attempt] = await listAttempts(ctx.db, `m2:${sub.id}`);
    expect(attempt).toMatchObject({ result: "retryable", status: null });
    expect(["tls_error", "connection_reset"]).toContain(attempt!.errorClass);
    expect(await getDelivery(ctx.db, `m2:${sub.id}`)).toMatchObject({ status: "pending", attempts: 1 });

    // No certificate at all (the endpoint's CA trusted, nothing presented): the transport alone.
    const without = await transport.deliver({ url: receiver.url, webhookId: "no-cert", timestamp: Math.floor(Date.now() / 1000), body: "{}", secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], clientCertificate: { id: "ca-only", ca: ca.ca } });
    expect(without).toMatchObject({ result: "retryable", status: null });
    expect(["tls_error", "connection_reset"]).toContain(without.errorClass);
    expect(receiver.received).toEqual([]);
    expect(receiver.refusedHandshakes).toBeGreaterThanOrEqual(refusedBefore + 2);
  });

  it("checked at creation: a key of another certificate, an expired certificate, text that is no PEM, a CA bundle without certificates", async () => {
    const other = ca.client("other");
    const base = { url: receiver.url, eventTypes: ["*"] };
    await expect(createSubscription(ctx.db, { ...base, auth: { kind: "mtls", certificate: client.cert, privateKey: other.key } }))
      .rejects.toThrow("Invalid subscription: auth.privateKey: does not match the certificate (it is another certificate's key)");
    const expired = ca.client("old", { notBefore: new Date("2020-01-01T00:00:00Z"), notAfter: new Date("2020-01-02T00:00:00Z") });
    await expect(createSubscription(ctx.db, { ...base, auth: mtls(expired) })).rejects.toThrow("auth.certificate: expired on 2020-01-02T00:00:00.000Z; give a valid one");
    await expect(createSubscription(ctx.db, { ...base, auth: { kind: "mtls", certificate: "hello", privateKey: client.key } })).rejects.toThrow(/auth\.certificate: is not a PEM X\.509 certificate/);
    await expect(createSubscription(ctx.db, { ...base, auth: { kind: "mtls", certificate: client.cert, privateKey: "nope" } })).rejects.toThrow(/auth\.privateKey: is not an unencrypted PEM private key/);
    await expect(createSubscription(ctx.db, { ...base, auth: { ...mtls(client), ca: "not a bundle" } })).rejects.toThrow(/auth\.ca: holds no PEM certificate/);
    expect((await ctx.db.query("SELECT count(*)::int AS n FROM outbound_subscriptions")).rows[0]).toEqual({ n: 0 });
  });

  it("a certificate about to expire is warned of; once expired, attempts fail as client_certificate_expired and it shows expired; a new one and a replay deliver", async () => {
    const longLived = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["none.*"], auth: mtls(ca.client("fine", { notAfter: new Date(Date.now() + 90 * 86_400_000) })) });
    expect(longLived.warnings).toBeUndefined();
    expect(longLived.auth).toMatchObject({ certificate: { expiresSoon: false, expired: false } });

    const notAfter = new Date(Math.ceil((Date.now() + 8000) / 1000) * 1000);
    const shortLived = ca.client("short-lived", { notAfter });
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["x.*"], auth: mtls(shortLived) });
    expect(sub.warnings).toEqual([expect.stringContaining(`auth: the client certificate expires on ${notAfter.toISOString()} (in less than a day)`)]);
    expect(sub.auth).toMatchObject({ certificate: { notAfter: notAfter.toISOString(), expiresSoon: true, expired: false, expiresInDays: 0 } });

    relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST });
    await enqueue(ctx.db, { id: "before", type: "x.y", data: {} });
    expect(await relay.runOnce()).toBe(1);
    expect(await getDelivery(ctx.db, `before:${sub.id}`)).toMatchObject({ status: "delivered" });

    await waitFor("the certificate has expired", () => Date.now() > notAfter.getTime() + 200, 20_000, 100);
    await enqueue(ctx.db, { id: "after", type: "x.y", data: {} });
    expect(await relay.runOnce()).toBe(1);
    expect(await getDelivery(ctx.db, `after:${sub.id}`)).toMatchObject({ status: "dead", attempts: 1 });
    const [attempt] = await listAttempts(ctx.db, `after:${sub.id}`);
    expect(attempt).toMatchObject({ result: "permanent", status: null, errorClass: "client_certificate_expired" });
    expect(attempt!.responseExcerpt).toContain(`expired on ${notAfter.toISOString()}`);
    expect((await getSubscription(ctx.db, sub.id)).auth).toMatchObject({ certificate: { expired: true, expiresSoon: false } });
    expect(receiver.received.map((r) => r.webhookId)).toEqual([`before:${sub.id}`]);

    // Renewed (the whole auth again) and replayed: delivered with the new certificate.
    await updateSubscription(ctx.db, sub.id, { auth: mtls(ca.client("renewed")) });
    await replayDeadLetter(ctx.db, `after:${sub.id}`);
    expect(await relay.runOnce()).toBe(1);
    expect(await getDelivery(ctx.db, `after:${sub.id}`)).toMatchObject({ status: "delivered" });
    expect(receiver.received.at(-1)).toEqual({ webhookId: `after:${sub.id}`, clientCommonName: "renewed" });
  }, 60_000);
});
