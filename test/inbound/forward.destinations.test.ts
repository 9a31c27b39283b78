/**
 * Issue 30 item 4: a partner's forwarding fans out by content to several destinations, each with
 * a filter (the subscription filters' language) and optionally a transformation (the subscription
 * sandbox). On both backends: every destination whose filter matches gets the event, exactly those
 * (judged by a reference written here, not by matchesFilter); one that does not match is skipped
 * and the entry says so; an event no destination wants is still stored, processed and shows every
 * skip; a transformation that throws ends that destination's delivery as a permanent failure with
 * its reason while the others are delivered; a destination's changes apply to the next event;
 * the legacy single forward (PARTNERS forward.url) is the `default` destination, unchanged.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { DEFAULT_DESTINATION, ensureForwardSubscriptions, forwardSubscriptionId } from "../../shared/inbound/forward.js";
import { addForwardDestination, ForwardDestinationConflictError, ForwardingDisabledError, getForwarding, removeForwardDestination, updateForwardDestination } from "../../shared/inbound/forwardDestinations.js";
import { getInboxEntry } from "../../shared/inbound/inbox.js";
import { inlineMessage } from "../../shared/cloud/inboundMessage.js";
import { processInbound } from "../../shared/cloud/processInbound.js";
import { createDispatchHandler } from "../../shared/inbound/dispatch.js";
import { InboxProcessor } from "../../shared/inbound/processor.js";
import { ingest, type IngestDeps } from "../../shared/inbound/ingest.js";
import { parsePartners } from "../../shared/inbound/verify/index.js";
import { deleteSubscription, getDeadLetter, getDelivery, listAttempts, NotFoundError, OutboundValidationError } from "../../shared/outbound/index.js";
import { createRelay } from "../../shared/outbound/relay.js";
import { generateSecret } from "../../shared/outbound/signature.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { migrate } from "../../shared/db/migrate.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, startReceiver, type Receiver } from "../outbound/support/receiver.js";
import { resetInbound, SECRET, signed } from "./helpers.js";

interface Order { id: string; type: string; amount: number; currency: string }
const ORDERS: Order[] = [
  { id: "o1", type: "order.paid", amount: 50, currency: "EUR" },
  { id: "o2", type: "order.paid", amount: 500, currency: "USD" },
  { id: "o3", type: "order.refunded", amount: 150, currency: "EUR" },
  { id: "o4", type: "order.paid", amount: 20, currency: "GBP" }, // no filtered destination wants it
];
/** The reference: which filtered destinations want an order, written without the filter code. */
const wants = {
  eur: (o: Order) => o.currency === "EUR",
  big: (o: Order) => o.amount > 100 && o.type === "order.paid",
};

describeEachBackend("forwarding to several destinations by content", (ctx) => {
  const legacySecret = generateSecret();
  let receiver: Receiver;
  let transport: Transport;
  const partners = parsePartners(JSON.stringify({
    shop: { scheme: "standard-webhooks", secrets: [SECRET], forward: true },
    legacy: { scheme: "standard-webhooks", secrets: [SECRET], forward: { url: "http://127.0.0.1:9/legacy", secrets: [legacySecret] } },
    quiet: { scheme: "standard-webhooks", secrets: [SECRET] },
  }));
  let deps: IngestDeps;

  beforeAll(async () => {
    receiver = await startReceiver();
    transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 });
    deps = { db: ctx.db, partners, maxBodyBytes: 65536 };
  });
  afterAll(async () => { await receiver.close(); await transport.close(); });
  beforeEach(async () => {
    await resetInbound(ctx.db);
    await resetOutbound(ctx.db);
    await ctx.db.query("TRUNCATE inbound_forward_destinations");
    receiver.received.length = 0;
  });

  const send = async (partner: string, o: Order) => {
    const d = signed(`${partner}-${o.id}`, JSON.stringify({ type: o.type, data: { order: o.id, amount: o.amount, currency: o.currency } }));
    const r = await ingest(deps, partner, d.headers, d.body);
    expect(r.status).toBe(202);
    return (r.body as { inboxId: string }).inboxId;
  };
  const relayAll = async () => {
    const relay = createRelay({ db: ctx.db, transport, batchSize: 100 });
    while ((await relay.runOnce()) > 0);
  };

  it("fans out by filter: exactly the matching destinations get each event; skips are written on the entry; a throwing transformation fails only its own", async () => {
    const eur = await addForwardDestination(ctx.db, partners, "shop", { name: "eur", url: `${receiver.url}/eur`, filter: { "data.data.currency": "EUR" } });
    const big = await addForwardDestination(ctx.db, partners, "shop", { name: "big", url: `${receiver.url}/big`, filter: { "data.data.amount": { $gt: 100 }, type: "order.paid" } });
    const slack = await addForwardDestination(ctx.db, partners, "shop", {
      name: "slack", url: `${receiver.url}/slack`,
      transformation: "(e) => e.data.currency === 'USD' ? (() => { throw new Error('no USD channel for ' + e.data.order) })() : { body: { text: `${e.type} ${e.data.order}` } }",
    });
    expect(eur.secrets).toHaveLength(1);
    expect(eur.source).toBe("api");

    const inboxIds = new Map<string, string>();
    for (const o of ORDERS) inboxIds.set(o.id, await send("shop", o));
    await relayAll();

    const bySub = new Map<string, string[]>();
    for (const r of receiver.received) {
      const [eventId, subId] = r.webhookId.split(":");
      bySub.set(subId!, [...(bySub.get(subId!) ?? []), eventId!]);
    }
    const eventOf = (o: Order) => `fwd_${inboxIds.get(o.id)}`;
    expect((bySub.get(eur.subscriptionId) ?? []).sort()).toEqual(ORDERS.filter(wants.eur).map(eventOf).sort());
    expect((bySub.get(big.subscriptionId) ?? []).sort()).toEqual(ORDERS.filter(wants.big).map(eventOf).sort());
    // slack: every order but the USD one, whose transformation threw.
    expect((bySub.get(slack.subscriptionId) ?? []).sort()).toEqual(ORDERS.filter((o) => o.currency !== "USD").map(eventOf).sort());

    // Each request is the partner's bytes (or the transformation's), signed by its destination's secret.
    for (const r of receiver.received) {
      const dest = [eur, big, slack].find((d) => r.webhookId.endsWith(`:${d.subscriptionId}`))!;
      new Webhook(dest.secrets![0]!).verify(r.body, r.headers as Record<string, string>);
      expect(r.headers["webhooks-partner"]).toBe("shop");
    }
    const slackO1 = receiver.received.find((r) => r.webhookId === `${eventOf(ORDERS[0]!)}:${slack.subscriptionId}`)!;
    expect(JSON.parse(slackO1.body)).toEqual({ text: "order.paid o1" });

    // The throwing transformation: that delivery is dead, permanent, with the reason; nothing sent.
    const usd = `${eventOf(ORDERS[1]!)}:${slack.subscriptionId}`;
    const dead = await getDeadLetter(ctx.db, usd);
    expect(dead.deadReason).toMatch(/^permanent failure: transformation_failed .*no USD channel for o2/);
    const [attempt] = await listAttempts(ctx.db, usd);
    expect(attempt!.errorClass).toBe("transformation_failed");
    expect((await getDelivery(ctx.db, `${eventOf(ORDERS[1]!)}:${big.subscriptionId}`)).status).toBe("delivered");

    // What forwarding did with each entry, per destination, skips with their reason.
    for (const o of ORDERS) {
      const entry = await getInboxEntry(ctx.db, inboxIds.get(o.id)!);
      const outcomes = Object.fromEntries(entry!.forwarding!.map((f) => [f.destination, f.outcome]));
      expect(outcomes, o.id).toEqual({ big: wants.big(o) ? "enqueued" : "skipped", eur: wants.eur(o) ? "enqueued" : "skipped", slack: "enqueued" });
      for (const f of entry!.forwarding!) if (f.outcome === "skipped") expect(f.reason).toBe("the destination's filter does not match this event");
    }
  });

  it("an event no destination wants is stored and shows every skip; no outbound event is written", async () => {
    await addForwardDestination(ctx.db, partners, "shop", { name: "eur", url: `${receiver.url}/eur`, filter: { "data.data.currency": "EUR" } });
    const gbp = ORDERS[3]!;
    const id = await send("shop", gbp);
    const entry = await getInboxEntry(ctx.db, id);
    expect(entry!.status).toBe("pending"); // processed as usual by the inbox processor
    expect(entry!.forwarding).toEqual([{ destination: "eur", subscriptionId: expect.any(String), outcome: "skipped", reason: "the destination's filter does not match this event" }]);
    expect((await ctx.db.query("SELECT 1 FROM outbound_events WHERE id = $1", [`fwd_${id}`])).rows).toHaveLength(0);
    // A partner that forwards to nothing yet: stored, and its entry says so (an empty list).
    await removeForwardDestination(ctx.db, partners, "shop", "eur");
    const alone = await send("shop", ORDERS[0]!);
    expect((await getInboxEntry(ctx.db, alone))!.forwarding).toEqual([]);
    // A partner that does not forward: no forwarding on its entries at all.
    expect((await getInboxEntry(ctx.db, await send("quiet", ORDERS[0]!)))!.forwarding).toBeNull();
  });

  it("a destination's new filter, transformation or removal applies from the next event on", async () => {
    const d = await addForwardDestination(ctx.db, partners, "shop", { name: "ops", url: `${receiver.url}/ops`, filter: { "data.data.currency": "EUR" } });
    const first = await send("shop", ORDERS[1]!); // USD: skipped
    const changed = await updateForwardDestination(ctx.db, partners, "shop", "ops", { filter: null, transformation: "(e) => ({ body: e.data.order })" });
    expect(changed.filter).toBeNull();
    const second = await send("shop", ORDERS[1]!.id === "o2" ? { ...ORDERS[1]!, id: "o2b" } : ORDERS[1]!);
    await relayAll();
    expect(receiver.received.map((r) => r.webhookId)).toEqual([`fwd_${second}:${d.subscriptionId}`]);
    expect(receiver.received[0]!.body).toBe("o2b");
    expect((await getInboxEntry(ctx.db, first))!.forwarding![0]!.outcome).toBe("skipped");
    const removed = await removeForwardDestination(ctx.db, partners, "shop", "ops");
    expect(removed.subscriptionId).toBe(d.subscriptionId);
    await send("shop", { ...ORDERS[0]!, id: "o1b" });
    expect((await ctx.db.query("SELECT count(*)::int AS n FROM outbound_deliveries WHERE subscription_id = $1", [d.subscriptionId])).rows[0]).toEqual({ n: 1 });
    expect((await getForwarding(ctx.db, partners, "shop")).destinations).toEqual([]);
  });

  it("the legacy forward.url is the default destination, beside the API's; it is shown, and changed only in PARTNERS", async () => {
    await ensureForwardSubscriptions(ctx.db, partners);
    const extra = await addForwardDestination(ctx.db, partners, "legacy", { name: "audit", url: `${receiver.url}/audit`, filter: { type: { $prefix: "order.ref" } } });
    const forwarding = await getForwarding(ctx.db, partners, "legacy");
    expect(forwarding.enabled).toBe(true);
    expect(forwarding.destinations.map((x) => [x.name, x.source, x.subscriptionId, x.url])).toEqual([
      ["audit", "api", extra.subscriptionId, `${receiver.url}/audit`],
      [DEFAULT_DESTINATION, "config", forwardSubscriptionId("legacy"), "http://127.0.0.1:9/legacy"],
    ]);
    expect(forwarding.destinations[1]!.secrets).toBeUndefined();
    const paid = await send("legacy", ORDERS[0]!);
    const refunded = await send("legacy", ORDERS[2]!);
    // As before issue 30: the event fwd_<entry> with the delivery fwd_<entry>:fwd_<partner>.
    expect((await getDelivery(ctx.db, `fwd_${paid}:${forwardSubscriptionId("legacy")}`)).status).toBe("pending");
    expect((await ctx.db.query("SELECT subscription_id FROM outbound_deliveries WHERE event_id = $1 ORDER BY 1", [`fwd_${refunded}`])).rows.map((r) => r.subscription_id).sort())
      .toEqual([extra.subscriptionId, forwardSubscriptionId("legacy")].sort());
    await expect(updateForwardDestination(ctx.db, partners, "legacy", DEFAULT_DESTINATION, { url: "https://elsewhere.example/" })).rejects.toThrow(ForwardDestinationConflictError);
    await expect(removeForwardDestination(ctx.db, partners, "legacy", DEFAULT_DESTINATION)).rejects.toThrow(/follows the partner's forward\.url .* in PARTNERS/);
    // forward: true (the API's destinations only) removes the default destination at the next start.
    await ensureForwardSubscriptions(ctx.db, parsePartners(JSON.stringify({ legacy: { scheme: "standard-webhooks", secrets: [SECRET], forward: true } })));
    expect((await getForwarding(ctx.db, partners, "legacy")).destinations.map((x) => x.name)).toEqual(["audit"]);
  });

  it("the cloud processors' path (processInbound) fans out the same way, once for a redelivered message", async () => {
    const eur = await addForwardDestination(ctx.db, partners, "shop", { name: "eur", url: `${receiver.url}/eur`, filter: { "data.data.currency": "EUR" } });
    const usd = await addForwardDestination(ctx.db, partners, "shop", { name: "usd", url: `${receiver.url}/usd`, filter: { "data.data.currency": "USD" } });
    const processor = new InboxProcessor({ db: ctx.db, handler: createDispatchHandler([]) });
    const body = Buffer.from(JSON.stringify({ type: "order.paid", data: { order: "c1", amount: 10, currency: "EUR" } }));
    const outgoing = inlineMessage({ partner: "shop", eventId: `cloud-${ctx.backend}`, eventType: "order.paid", receivedAt: new Date() }, body);
    const message = { id: "m-1", body: outgoing.body, attributes: outgoing.attributes ?? {} };
    for (let i = 0; i < 3; i++) expect(["ack", "fail"]).toContain((await processInbound({ db: ctx.db, processor, partners: async () => partners }, message)).action);
    const { rows } = await ctx.db.query<{ id: string; forwarding: unknown }>("SELECT id, forwarding FROM inbox_entries WHERE partner_event_id = $1", [`cloud-${ctx.backend}`]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.forwarding).toEqual([
      { destination: "eur", subscriptionId: eur.subscriptionId, outcome: "enqueued", deliveryId: `fwd_${rows[0]!.id}:${eur.subscriptionId}` },
      { destination: "usd", subscriptionId: usd.subscriptionId, outcome: "skipped", reason: "the destination's filter does not match this event" },
    ]);
    expect((await ctx.db.query("SELECT subscription_id FROM outbound_deliveries WHERE event_id = $1", [`fwd_${rows[0]!.id}`])).rows).toEqual([{ subscription_id: eur.subscriptionId }]);
  });

  it("migration 022 makes each existing fwd_<partner> subscription its partner's default destination: forwarding keeps working before the next start", async () => {
    // The database as before 022, with a partner's forward subscription written by the old code.
    await ctx.db.query("DROP TABLE inbound_forward_destinations");
    await ctx.db.query("ALTER TABLE inbox_entries DROP COLUMN forwarding");
    await ctx.db.query("DELETE FROM schema_migrations WHERE name = '022_inbound_forward_destinations.sql'");
    await ctx.db.query("INSERT INTO outbound_subscriptions (id, url, event_types, secrets, application_id) VALUES ('fwd_legacy', 'http://127.0.0.1:9/legacy', ARRAY['webhooks.forward.legacy'], ARRAY[]::text[], 'app_platform')");
    await ctx.db.query("INSERT INTO outbound_subscriptions (id, url, event_types, secrets, application_id, deleted_at) VALUES ('fwd_gone', 'http://127.0.0.1:9/gone', ARRAY['webhooks.forward.gone'], ARRAY[]::text[], 'app_platform', now())");
    expect(await migrate(ctx.db)).toEqual(["022_inbound_forward_destinations.sql"]);
    expect((await ctx.db.query("SELECT partner, name, subscription_id FROM inbound_forward_destinations ORDER BY partner")).rows)
      .toEqual([{ partner: "legacy", name: DEFAULT_DESTINATION, subscription_id: "fwd_legacy" }]);
    // Stored before any ensureForwardSubscriptions: forwarded to it as before.
    const id = await send("legacy", ORDERS[0]!);
    expect((await getDelivery(ctx.db, `fwd_${id}:fwd_legacy`)).status).toBe("pending");
  });

  it("refuses precisely: unknown partner, a partner that does not forward, a bad name, filter or transformation, a taken name", async () => {
    await expect(addForwardDestination(ctx.db, partners, "nobody", { name: "a", url: receiver.url })).rejects.toThrow(NotFoundError);
    await expect(addForwardDestination(ctx.db, partners, "quiet", { name: "a", url: receiver.url })).rejects.toThrow(ForwardingDisabledError);
    const refusal = async (input: unknown) => {
      try {
        await addForwardDestination(ctx.db, partners, "shop", input);
      } catch (error) {
        expect(error).toBeInstanceOf(OutboundValidationError);
        return (error as OutboundValidationError).issues;
      }
      throw new Error("expected a refusal");
    };
    expect(await refusal({ name: "Big Orders", url: receiver.url })).toEqual([{ path: "name", message: expect.stringMatching(/lowercase letters/) }]);
    expect(await refusal({ name: DEFAULT_DESTINATION, url: receiver.url })).toEqual([{ path: "name", message: expect.stringMatching(/forward\.url in PARTNERS/) }]);
    expect(await refusal({ name: "a", url: receiver.url, filter: { "data.amount": { $gtt: 1 } } })).toEqual([{ path: "filter.data.amount.$gtt", message: expect.stringMatching(/unknown operator/) }]);
    expect(await refusal({ name: "a", url: receiver.url, transformation: "(e) => {" })).toEqual([{ path: "transformation", message: expect.stringMatching(/SyntaxError/) }]);
    expect(await refusal({ name: "a", url: receiver.url, events: ["x"] })).toEqual([{ path: "(root)", message: expect.stringMatching(/events/) }]);
    // Nothing of the refused ones was written.
    expect((await getForwarding(ctx.db, partners, "shop")).destinations).toEqual([]);
    await addForwardDestination(ctx.db, partners, "shop", { name: "a", url: receiver.url });
    await expect(addForwardDestination(ctx.db, partners, "shop", { name: "a", url: receiver.url })).rejects.toThrow(/already has a destination "a"/);
    await expect(updateForwardDestination(ctx.db, partners, "shop", "b", { url: receiver.url })).rejects.toThrow(NotFoundError);
    await expect(updateForwardDestination(ctx.db, partners, "shop", "a", {})).rejects.toThrow(/send at least one field/);
    expect((await getForwarding(ctx.db, partners, "shop")).destinations.map((x) => x.name)).toEqual(["a"]);
    // A destination whose subscription was deleted directly (DELETE /subscriptions/:id) is gone, and its name free.
    const a = (await getForwarding(ctx.db, partners, "shop")).destinations[0]!;
    await deleteSubscription(ctx.db, a.subscriptionId);
    expect((await getForwarding(ctx.db, partners, "shop")).destinations).toEqual([]);
    const again = await addForwardDestination(ctx.db, partners, "shop", { name: "a", url: receiver.url });
    expect(again.subscriptionId).not.toBe(a.subscriptionId);
    expect((await getForwarding(ctx.db, partners, "shop")).destinations.map((x) => x.subscriptionId)).toEqual([again.subscriptionId]);
  });
});
