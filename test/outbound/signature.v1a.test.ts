/**
 * Issue 17, Must-show 3 (outbound): `v1a` (ed25519) as a per-subscription choice, end to end over
 * the API: created with `signatureScheme: "v1a"`, its public key from GET
 * /subscriptions/:id/public-keys, every delivery's signature verified by tweetnacl (an ed25519
 * implementation independent of node:crypto) with that public key; rotation keeps the old key
 * valid meanwhile; a v1 subscription moves to v1a sending both; the signing key is encrypted at
 * rest. Both backends.
 */
import { Webhook } from "standardwebhooks";
import nacl from "tweetnacl";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { verifyWebhook } from "../../shared/inbound/verify/index.js";
import { createRelay } from "../../shared/outbound/index.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { describeEachBackend } from "../support/databases.js";
import { startTestPlatform, type TestPlatform } from "../operator/harness.js";
import { resetOutbound, startReceiver, type Received, type Receiver } from "./support/receiver.js";

/** The spec's check, with tweetnacl: some v1a entry is a valid signature of `{id}.{timestamp}.{body}` under `whpk`. */
function naclVerifies(whpk: string, r: Received): boolean {
  const publicKey = Buffer.from(whpk.slice("whpk_".length), "base64");
  const content = Buffer.from(`${r.headers["webhook-id"]}.${r.headers["webhook-timestamp"]}.${r.body}`);
  return String(r.headers["webhook-signature"]).split(" ")
    .filter((e) => e.startsWith("v1a,"))
    .some((e) => nacl.sign.detached.verify(content, Buffer.from(e.slice(4), "base64"), publicKey));
}

const versions = (r: Received) => String(r.headers["webhook-signature"]).split(" ").map((e) => e.split(",")[0]);

describeEachBackend("v1a (ed25519) subscriptions", (ctx) => {
  let t: TestPlatform;
  let transport: Transport;
  let receiver: Receiver | undefined;

  beforeAll(async () => {
    t = await startTestPlatform(ctx.db, {}, { workers: false });
    transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 });
  });
  afterAll(async () => {
    await t?.stop();
    await transport.close();
  });
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
    await resetOutbound(ctx.db);
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(t.baseUrl + path, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${t.token}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  /** Sends one event and lets a relay deliver it; returns what the receiver got. */
  const deliverOne = async (eventId: string): Promise<Received> => {
    const before = receiver!.received.length;
    expect((await call("POST", "/events", { id: eventId, type: "order.paid", data: { eventId } })).status).toBe(201);
    await createRelay({ db: ctx.db, transport }).runOnce();
    expect(receiver!.received).toHaveLength(before + 1);
    return receiver!.received[before]!;
  };

  it("created with signatureScheme v1a: its public key from the API, every delivery verified by tweetnacl; the signing key encrypted at rest", async () => {
    receiver = await startReceiver();
    const created = await call("POST", "/subscriptions", { url: receiver.url, eventTypes: ["order.*"], signatureScheme: "v1a" });
    expect(created.status).toBe(201);
    const [whsk] = created.body.secrets as string[];
    expect(whsk).toMatch(/^whsk_/);
    const got = await call("GET", `/subscriptions/${created.body.id}/public-keys`);
    expect(got).toEqual({ status: 200, body: { id: created.body.id, publicKeys: created.body.publicKeys } });
    const [whpk] = got.body.publicKeys as string[];
    expect(whpk).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    // The public key is the seed's, as an independent implementation derives it.
    expect(Buffer.from(nacl.sign.keyPair.fromSeed(Buffer.from(whsk!.slice(5), "base64")).publicKey).toString("base64")).toBe(whpk!.slice(5));
    // The subscription itself shows neither.
    const sub = await call("GET", `/subscriptions/${created.body.id}`);
    expect(sub.body.secrets).toBeUndefined();
    expect(sub.body.publicKeys).toBeUndefined();

    const r = await deliverOne("v1a-1");
    expect(versions(r)).toEqual(["v1a"]);
    expect(naclVerifies(whpk!, r)).toBe(true);
    expect(naclVerifies(whpk!, { ...r, body: r.body.replace("v1a-1", "v1a-2") })).toBe(false);
    // Our own inbound accepts it with the public key (a sender signing only v1a).
    const partner = { name: "self", scheme: "standard-webhooks" as const, secrets: [whpk!] };
    expect(verifyWebhook(partner, r.headers as Record<string, string>, Buffer.from(r.body), Math.floor(Date.now() / 1000)).ok).toBe(true);

    const { rows } = await ctx.db.query<{ row: string }>("SELECT row_to_json(s)::text AS row FROM outbound_subscriptions s");
    for (const { row } of rows) {
      expect(row).not.toContain("whsk_");
      expect(row).not.toContain(whsk!.slice(5));
    }
  });

  it("rotation keeps the old key valid: two v1a signatures, both public keys listed; then only the new one", async () => {
    receiver = await startReceiver();
    const created = await call("POST", "/subscriptions", { url: receiver.url, eventTypes: ["order.*"], signatureScheme: "v1a" });
    const [oldKey] = created.body.publicKeys as string[];
    const rotated = await call("POST", `/subscriptions/${created.body.id}/secrets`);
    expect(rotated.status).toBe(200);
    expect((rotated.body.secrets as string[]).map((s) => s.slice(0, 5))).toEqual(["whsk_", "whsk_"]);
    const keys = (await call("GET", `/subscriptions/${created.body.id}/public-keys`)).body.publicKeys as string[];
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(oldKey);
    const r = await deliverOne("rot-1");
    expect(versions(r)).toEqual(["v1a", "v1a"]);
    expect(naclVerifies(oldKey!, r)).toBe(true); // a receiver that has not switched yet
    expect(naclVerifies(keys[0]!, r)).toBe(true); // one that has
    // Finishing the rotation: only the new signing key.
    const finished = await call("POST", `/subscriptions/${created.body.id}/secrets`, { secrets: [(rotated.body.secrets as string[])[0]] });
    expect(finished.body.publicKeys).toEqual([keys[0]]);
    const after = await deliverOne("rot-2");
    expect(naclVerifies(keys[0]!, after)).toBe(true);
    expect(naclVerifies(oldKey!, after)).toBe(false);
  });

  it("a v1 subscription moves to v1a: both signatures meanwhile, the v1 one still verified by the standardwebhooks library", async () => {
    receiver = await startReceiver();
    const created = await call("POST", "/subscriptions", { url: receiver.url, eventTypes: ["order.*"] });
    const [whsec] = created.body.secrets as string[];
    expect((await call("GET", `/subscriptions/${created.body.id}/public-keys`)).body.publicKeys).toEqual([]);
    const moved = await call("POST", `/subscriptions/${created.body.id}/secrets`, { signatureScheme: "v1a" });
    expect(moved.status).toBe(200);
    const [whpk] = moved.body.publicKeys as string[];
    const r = await deliverOne("move-1");
    expect(versions(r)).toEqual(["v1a", "v1"]);
    expect(naclVerifies(whpk!, r)).toBe(true);
    expect(() => new Webhook(whsec!).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    // A later plain rotation stays v1a (it follows the newest secret).
    const again = await call("POST", `/subscriptions/${created.body.id}/secrets`);
    expect((again.body.secrets as string[]).map((s) => s.slice(0, 5))).toEqual(["whsk_", "whsk_"]);
  });

  it("refuses secrets with signatureScheme together, an unknown scheme, and a public key as a signing secret", async () => {
    const url = "http://127.0.0.1:9/hooks";
    const both = await call("POST", "/subscriptions", { url, eventTypes: ["a.b"], signatureScheme: "v1a", secrets: [`whsec_${Buffer.alloc(32, 1).toString("base64")}`] });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/either secrets .* or signatureScheme/);
    expect((await call("POST", "/subscriptions", { url, eventTypes: ["a.b"], signatureScheme: "v2" })).status).toBe(400);
    const pub = await call("POST", "/subscriptions", { url, eventTypes: ["a.b"], secrets: [`whpk_${Buffer.alloc(32, 1).toString("base64")}`] });
    expect(pub.status).toBe(400);
    expect(pub.body.error.message).toMatch(/whsk_ ed25519 signing key/);
    expect((await call("GET", "/subscriptions/sub_nope/public-keys")).status).toBe(404);
  });
});
