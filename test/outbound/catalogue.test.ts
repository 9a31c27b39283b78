/**
 * Issue 30 item 1 / Must-show 1: the event catalogue. CRUD and OpenAPI import; validation off /
 * warn / enforce at enqueue(), enqueueMany(), POST /events and POST /events/batch (enforce writes
 * nothing); a change of validation applies to the next enqueue; a schema is compiled once per
 * version; strict catalogues refuse subscriptions that match no entry (issue 27 item 13's
 * `ordr.paid`), others warn.
 */
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { createSubscription, enqueue, enqueueMany, OutboundValidationError } from "../../shared/outbound/index.js";
import {
  compiledValidatorCount, createEventType, deleteEventType, EventTypeExistsError, getEventType, listEventTypes, SchemaValidationError,
  setCatalogueSettings, updateEventType,
} from "../../shared/outbound/catalogue.js";
import { importEventTypes } from "../../shared/outbound/catalogueImport.js";
import { updateSubscription } from "../../shared/outbound/subscriptionChanges.js";
import { describeEachBackend } from "../support/databases.js";
import { startTestPlatform, type TestPlatform } from "../operator/harness.js";
import { resetOutbound } from "./support/receiver.js";

const orderPaid = {
  name: "order.paid",
  description: "An order was paid.",
  schema: { type: "object", required: ["orderId", "amount"], properties: { orderId: { type: "string" }, amount: { type: "number", minimum: 0 }, currency: { enum: ["EUR", "USD"] } }, additionalProperties: false },
  examples: [{ orderId: "ord_1", amount: 12.5, currency: "EUR" }],
};

const resetCatalogue = async (db: { query(text: string): Promise<unknown> }) => {
  await resetOutbound(db);
  await db.query("TRUNCATE outbound_event_types, outbound_catalogue_settings");
  await db.query("UPDATE outbound_catalogue_revision SET token = gen_random_uuid()::text");
};

describeEachBackend("event catalogue", (ctx) => {
  afterEach(() => resetCatalogue(ctx.db));
  const count = async (table: string) => Number((await ctx.db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);

  it("creates, reads, lists, edits (a new schema is a new version) and removes event types", async () => {
    const created = await createEventType(ctx.db, orderPaid);
    expect(created).toMatchObject({ applicationId: "app_default", name: "order.paid", version: 1, deprecated: false, validation: "off", examples: orderPaid.examples });
    await createEventType(ctx.db, { name: "order.refunded" });
    await expect(createEventType(ctx.db, { name: "order.paid" })).rejects.toBeInstanceOf(EventTypeExistsError);
    expect((await listEventTypes(ctx.db)).map((t) => t.name)).toEqual(["order.paid", "order.refunded"]);

    const described = await updateEventType(ctx.db, "order.paid", { description: "Paid in full.", deprecated: true });
    expect(described).toMatchObject({ version: 1, deprecated: true, description: "Paid in full." });
    expect((await listEventTypes(ctx.db, { includeDeprecated: false })).map((t) => t.name)).toEqual(["order.refunded"]);
    const v2 = await updateEventType(ctx.db, "order.paid", { schema: { ...orderPaid.schema, required: ["orderId"] } });
    expect(v2.version).toBe(2);
    expect((await getEventType(ctx.db, "order.paid")).schema).toEqual({ ...orderPaid.schema, required: ["orderId"] });

    await deleteEventType(ctx.db, "order.refunded");
    await expect(getEventType(ctx.db, "order.refunded")).rejects.toThrow(/No event type/);
  });

  it("refuses a schema that does not compile, and examples that do not satisfy it", async () => {
    await expect(createEventType(ctx.db, { name: "x.bad", schema: { type: "objekt" } })).rejects.toThrow(/schema: not a valid JSON Schema 2020-12/);
    const error = await createEventType(ctx.db, { ...orderPaid, examples: [{ orderId: 1 }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboundValidationError);
    expect((error as OutboundValidationError).issues).toEqual(expect.arrayContaining([{ path: "examples[0].orderId", message: "must be string" }, { path: "examples[0]", message: "must have required property 'amount'" }]));
    expect(await count("outbound_event_types")).toBe(0);
  });

  it("validates at enqueue: off accepts anything, warn flags the event, enforce refuses and writes nothing", async () => {
    await createSubscription(ctx.db, { url: "https://example.com/hooks", eventTypes: ["order.*"] });
    await createEventType(ctx.db, orderPaid);
    const bad = { orderId: 7, amount: -1, extra: true };
    expect((await enqueue(ctx.db, { id: "off", type: "order.paid", data: bad })).schemaErrors).toBeUndefined();

    await updateEventType(ctx.db, "order.paid", { validation: "warn" });
    const warned = await enqueue(ctx.db, { id: "warned", type: "order.paid", data: bad });
    expect(warned.deliveries).toHaveLength(1);
    expect(warned.schemaErrors).toEqual(expect.arrayContaining([{ path: "data.orderId", message: "must be string" }, { path: "data.amount", message: "must be >= 0" }, { path: "data", message: "must NOT have additional properties (extra)" }]));
    const stored = await ctx.db.query<{ schema_errors: unknown }>("SELECT schema_errors FROM outbound_events WHERE id = 'warned'");
    expect(stored.rows[0]!.schema_errors).toEqual(warned.schemaErrors);
    expect((await enqueue(ctx.db, { id: "fine", type: "order.paid", data: { orderId: "o", amount: 1 } })).schemaErrors).toBeUndefined();

    await updateEventType(ctx.db, "order.paid", { validation: "enforce" });
    const before = [await count("outbound_events"), await count("outbound_deliveries")];
    const refused = await ctx.db.transaction((tx) => enqueue(tx, { id: "refused", type: "order.paid", data: bad })).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SchemaValidationError);
    expect((refused as Error).message).toMatch(/^Invalid event: data does not match the schema of order\.paid \(version 1\): data/);
    // A batch with one invalid event writes none of them, and names it.
    const batch = await ctx.db.transaction((tx) => enqueueMany(tx, [
      { id: "ok1", type: "order.paid", data: { orderId: "a", amount: 1 } },
      { id: "other", type: "order.refunded", data: "anything" },
      { id: "bad2", type: "order.paid", data: { orderId: "b" } },
    ])).catch((e: unknown) => e);
    expect((batch as Error).message).toMatch(/^events\[2\]: Invalid event: data does not match/);
    expect((batch as OutboundValidationError).issues).toEqual([{ path: "[2].data", message: "must have required property 'amount'" }]);
    expect([await count("outbound_events"), await count("outbound_deliveries")]).toEqual(before);
    // Types without a schema, or of another application, are not validated.
    expect((await enqueue(ctx.db, { id: "untyped", type: "order.refunded", data: bad })).created).toBe(true);
  });

  it("compiles a schema once per version, however many events it validates", async () => {
    await createEventType(ctx.db, { ...orderPaid, name: "order.compiled", validation: "enforce", schema: { ...orderPaid.schema, title: `once-${ctx.backend}` } });
    await enqueue(ctx.db, { id: "c0", type: "order.compiled", data: { orderId: "o", amount: 1 } });
    const compiled = compiledValidatorCount();
    await enqueueMany(ctx.db, Array.from({ length: 50 }, (_, i) => ({ id: `c${i + 1}`, type: "order.compiled", data: { orderId: "o", amount: i } })));
    for (let i = 0; i < 5; i++) await enqueue(ctx.db, { id: `s${i}`, type: "order.compiled", data: { orderId: "o", amount: i } });
    // Another change to the catalogue (not to this schema) reloads the validators, not recompiles them.
    await createEventType(ctx.db, { name: "unrelated.thing" });
    await enqueue(ctx.db, { id: "after", type: "order.compiled", data: { orderId: "o", amount: 1 } });
    expect(compiledValidatorCount()).toBe(compiled);
    await updateEventType(ctx.db, "order.compiled", { schema: { ...orderPaid.schema, title: `twice-${ctx.backend}` } });
    await enqueue(ctx.db, { id: "v2", type: "order.compiled", data: { orderId: "o", amount: 1 } });
    expect(compiledValidatorCount()).toBe(compiled + 1);
  });

  it("strict catalogue: a subscription matching no entry is refused (with a hint); otherwise accepted with a warning", async () => {
    await createEventType(ctx.db, { name: "order.paid" });
    await createEventType(ctx.db, { name: "order.refunded" });
    const warned = await createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["ordr.paid", "order.*"] });
    expect(warned.warnings).toEqual(["ordr.paid matches no event type of the catalogue (did you mean order.paid?)"]);
    expect((await createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["order.*"] })).warnings).toBeUndefined();

    await setCatalogueSettings(ctx.db, { strict: true });
    const refused = await createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["order.paid", "ordr.paid"] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OutboundValidationError);
    expect((refused as OutboundValidationError).issues).toEqual([{ path: "eventTypes[1]", message: "ordr.paid matches no event type of the catalogue (did you mean order.paid?)" }]);
    await expect(updateSubscription(ctx.db, warned.id, { eventTypes: ["invoice.*"] })).rejects.toThrow(/invoice\.\* matches no event type of the catalogue; the catalogue of app_default is strict/);
    expect((await updateSubscription(ctx.db, warned.id, { eventTypes: ["order.refunded"] })).eventTypes).toEqual(["order.refunded"]);
    expect(await count("outbound_subscriptions")).toBe(2);
  });

  it("imports event types from an OpenAPI document's webhooks, resolving components, and re-imports idempotently", async () => {
    const document = {
      openapi: "3.1.0", info: { title: "Shop", version: "1" },
      webhooks: {
        "order.paid": {
          post: {
            summary: "Order paid", description: "Sent when an order is paid.",
            requestBody: { content: { "application/json": {
              schema: { $ref: "#/components/schemas/OrderPaidEvent" },
              examples: { basic: { value: { type: "order.paid", data: { orderId: "ord_1", total: { amount: 10, currency: "EUR" } } } } },
            } } },
          },
        },
        "customer.created": { post: { requestBody: { content: { "application/json": { schema: { type: "object", properties: { id: { type: "string" } } }, example: { id: "cus_1" } } } } } },
        "not a type!": { post: {} },
      },
      components: { schemas: {
        OrderPaidEvent: { type: "object", properties: { type: { const: "order.paid" }, data: { $ref: "#/components/schemas/Order" } } },
        Order: { type: "object", required: ["orderId", "total"], properties: { orderId: { type: "string" }, total: { $ref: "#/components/schemas/Money" } } },
        Money: { type: "object", required: ["amount"], properties: { amount: { type: "number" }, currency: { type: "string" } } },
      } },
    };
    const result = await importEventTypes(ctx.db, { document, validation: "enforce" });
    expect(result).toEqual({ created: ["order.paid", "customer.created"], updated: [], unchanged: [], skipped: [{ key: "not a type!", reason: expect.stringContaining("not an event type name") }] });
    const paid = await getEventType(ctx.db, "order.paid");
    expect(paid).toMatchObject({ description: "Order paid: Sent when an order is paid.", examples: [{ orderId: "ord_1", total: { amount: 10, currency: "EUR" } }], validation: "enforce" });
    expect(paid.schema).toMatchObject({ $ref: "#/$defs/Order", $defs: { Order: expect.any(Object), Money: expect.any(Object) } });
    // The imported schema validates through its resolved references.
    await expect(enqueue(ctx.db, { type: "order.paid", data: { orderId: "o", total: { currency: "EUR" } } })).rejects.toThrow(/data\.total: must have required property 'amount'/);
    expect((await enqueue(ctx.db, { type: "order.paid", data: { orderId: "o", total: { amount: 3 } } })).created).toBe(true);

    expect(await importEventTypes(ctx.db, { document })).toMatchObject({ created: [], updated: [], unchanged: ["order.paid", "customer.created"] });
    document.components.schemas.Money.required = ["amount", "currency"];
    expect(await importEventTypes(ctx.db, { document })).toMatchObject({ updated: ["order.paid"], unchanged: ["customer.created"] });
    expect((await getEventType(ctx.db, "order.paid")).version).toBe(2);
    await expect(importEventTypes(ctx.db, { document: { openapi: "3.1.0", paths: {} } })).rejects.toThrow(/no `webhooks` object/);
  });
});

describeEachBackend("event catalogue over HTTP", (ctx) => {
  let platform: TestPlatform;
  beforeAll(async () => { platform = await startTestPlatform(ctx.db, {}, { workers: false }); });
  afterAll(() => platform.stop());
  afterEach(() => resetCatalogue(ctx.db));
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(platform.baseUrl + path, { method, headers: { authorization: `Bearer ${platform.token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: await res.json() as any };
  };

  it("CRUD on /event-types, and POST /events and /events/batch validate: 422 and nothing written under enforce", async () => {
    expect((await call("POST", "/event-types", { ...orderPaid, validation: "enforce" })).status).toBe(201);
    expect((await call("POST", "/event-types", { name: "order.paid" })).status).toBe(409);
    expect((await call("GET", "/event-types")).body.eventTypes.map((t: { name: string }) => t.name)).toEqual(["order.paid"]);
    expect((await call("GET", "/event-types/order.paid")).body.version).toBe(1);

    const refused = await call("POST", "/events", { id: "h1", type: "order.paid", data: { orderId: "x" } });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ code: "schema_validation_failed", details: [{ path: "data", message: "must have required property 'amount'" }] });
    const batch = await call("POST", "/events/batch", { events: [{ id: "h2", type: "order.paid", data: { orderId: "x", amount: 1 } }, { id: "h3", type: "order.paid", data: { amount: 1 } }] });
    expect(batch.status).toBe(422);
    expect(batch.body.error.message).toMatch(/^events\[1\]: /);
    expect((await ctx.db.query("SELECT id FROM outbound_events")).rows).toEqual([]);

    expect((await call("PATCH", "/event-types/order.paid", { validation: "warn" })).body.validation).toBe("warn");
    const warned = await call("POST", "/events", { id: "h4", type: "order.paid", data: { orderId: "x" } });
    expect(warned.status).toBe(201);
    expect(warned.body.schemaErrors).toEqual([{ path: "data", message: "must have required property 'amount'" }]);
    expect((await call("GET", "/events/h4")).body.schemaErrors).toEqual(warned.body.schemaErrors);

    expect((await call("PUT", "/catalogue-settings", { strict: true })).body).toEqual({ applicationId: "app_default", strict: true });
    const sub = await call("POST", "/subscriptions", { url: "http://127.0.0.1:9/h", eventTypes: ["ordr.paid"] });
    expect(sub.status).toBe(400);
    expect(sub.body.error.message).toContain("did you mean order.paid?");
    expect((await call("DELETE", "/event-types/order.paid")).body).toEqual({ name: "order.paid", deleted: true });
  });
});
