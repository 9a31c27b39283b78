/**
 * Management routes of outbound events, deliveries and dead letters (all behind the admin bearer
 * token; subscriptions are in ./subscriptions.ts). Input is validated with zod; typed errors of the
 * core become precise 4xx answers; every list pages the same way (../pagination.ts).
 */
import * as z from "zod/mini";
import type { PlatformContext } from "../../context.js";
import {
  countDeadLetters, enqueue, enqueueMany, getDeadLetter, getDelivery, getEvent, listAttempts, listDeadLetters, listDeliveries, listEvents,
  MAX_BULK_REPLAY, MAX_EVENTS_PER_BATCH, replayDeadLetter, replayDeadLetters, resendEvent,
} from "../../outbound/index.js";
import { decodeCursor, isString, isStringPair, page } from "../pagination.js";
import { HttpError, type Route } from "../router.js";
import { eventSchema } from "../../outbound/enqueue.js";
import {
  attemptSchema, batchResultSchema, countSchema, deadLetterSchema, deliverySchema, enqueueResultSchema, eventDetailSchema, eventSummarySchema, pageOf,
  orderingKeySchema, replayResultSchema, sendResultSchema, skipResultSchema,
} from "../schemas.js";
import { listOrderingKeys, skipOrderingKey } from "../../outbound/ordering.js";
import { ORDERING_KEY } from "../../outbound/enqueue.js";
import { bodyOf, cursor, filterText, limit, optionalJson, route, time } from "./validate.js";
import { actorFor, inApplication, listScope } from "../../tenancy/access.js";

const deliveryQuery = z.strictObject({
  status: z.optional(z.enum(["pending", "delivered", "dead", "cancelled"])),
  subscriptionId: filterText(),
  eventId: filterText(),
  eventType: filterText(),
  applicationId: filterText(),
  limit,
  cursor,
});
const pageQuery = z.strictObject({ limit, cursor });
/**
 * `eventType`, as on the other lists (deliveries, dead letters, bulk replay); `type`, this list's
 * first name for it, still works (issue 27 item 13: one name everywhere, no caller broken).
 */
const eventQuery = z.strictObject({
  eventType: filterText(),
  type: z.optional(z.string().check(z.minLength(1), z.maxLength(200), z.meta({ deprecated: true, description: "The former name of `eventType`; still accepted." }))),
  applicationId: filterText(), since: time(), until: time(), limit, cursor,
});
/** Dead letters by subscription, event type, reason (prefix) and when they died (`since` ≤ dead at < `until`). */
const deadLetterFilter = z.strictObject({
  subscriptionId: filterText(),
  eventType: filterText(),
  reason: filterText(),
  since: time(),
  until: time(),
  applicationId: filterText(),
});
const deadLetterQuery = z.extend(deadLetterFilter, { limit, cursor });
const bulkReplay = z.union([
  z.strictObject({ ids: z.array(z.string().check(z.minLength(1), z.maxLength(500))).check(z.minLength(1, "list at least one id"), z.maxLength(MAX_BULK_REPLAY)) }),
  z.strictObject({ filter: deadLetterFilter, limit: z.optional(z.number().check(z.int(), z.gte(1), z.lte(MAX_BULK_REPLAY))) }),
], { error: `send { "ids": [...] } or { "filter": { "subscriptionId"?, "eventType"?, "reason"?, "since"?, "until"?, "applicationId"? }, "limit"? }` });
const resendBody = z.strictObject({ subscriptionId: z.optional(z.string().check(z.minLength(1), z.maxLength(200))) });

/** Ordered delivery (issue 15): a subscription's keys with work; `blocked=true` only those a dead letter holds. */
const orderingKeyQuery = z.strictObject({
  blocked: z.optional(z.pipe(z.enum(["true", "false"]), z.transform((v: "true" | "false") => v === "true"))),
  limit,
  cursor,
});
const skipBody = z.strictObject({ deliveryId: z.optional(z.string().check(z.minLength(1), z.maxLength(500))) });

const batchBody = z.strictObject({ events: z.array(eventSchema).check(z.maxLength(MAX_EVENTS_PER_BATCH)) });

const isAttemptKey = (v: unknown): v is number => Number.isSafeInteger(v);

export function outboundRoutes(ctx: PlatformContext): Route[] {
  const { db, config } = ctx;
  const options = { maxPayloadBytes: config.MAX_PAYLOAD_BYTES };
  const delivery = { 200: { description: "The delivery.", schema: deliverySchema } };
  return [
    route("POST", "/events", {
      operationId: "sendEvent", access: { action: "write", audience: "application" }, tag: "Events", summary: "Enqueue an event",
      description: "Fanned out to one delivery per subscription whose event types match. Idempotent by `id`: the same id again returns the existing deliveries (200); with another type or data it is a 409. `data` is required (any JSON; null for none).",
      body: eventSchema,
      responses: {
        201: { description: "Enqueued.", schema: enqueueResultSchema },
        200: { description: "This id was enqueued before: its deliveries.", schema: enqueueResultSchema },
        409: { description: "This id names another event (type or data differ)." },
        422: { description: "Its type's catalogue entry validates with `enforce` and `data` does not match the schema: `error.details` lists the JSON Schema errors; nothing was written (docs/catalogue.md)." },
      },
    }, async (req) => {
      const event = await req.json();
      if (typeof event !== "object" || event === null || Array.isArray(event)) {
        throw new HttpError(400, "invalid_request", "The body must be a JSON object { id?, type, data, occurredAt? }.");
      }
      const result = await db.transaction((tx) => enqueue(tx, inApplication(req, event) as Parameters<typeof enqueue>[1], options));
      return { status: result.created ? 201 : 200, body: result };
    }),
    route("POST", "/events/batch", {
      operationId: "sendEvents", access: { action: "write", audience: "application" }, tag: "Events", summary: "Enqueue up to 1000 events in one transaction",
      description: "All are validated first; one invalid event rejects the call (naming it by index) and writes nothing.",
      body: batchBody,
      responses: {
        201: { description: "At least one was new.", schema: batchResultSchema },
        200: { description: "All were enqueued before.", schema: batchResultSchema },
        409: { description: "An id names another event." },
        422: { description: "An event's data does not match its type's enforced schema (named by index); nothing was written." },
      },
    }, async (req) => {
      const input = await req.json();
      const events = (input as { events?: unknown } | null)?.events;
      if (typeof input !== "object" || input === null || Array.isArray(input) || !Array.isArray(events) || Object.keys(input).length !== 1) {
        throw new HttpError(400, "invalid_request", `The body must be a JSON object { "events": [ { id?, type, data, occurredAt? }, … ] } with at most ${MAX_EVENTS_PER_BATCH} events.`);
      }
      const results = await db.transaction((tx) => enqueueMany(tx, events.map((e) => inApplication(req, e)) as Parameters<typeof enqueueMany>[1], options));
      return { status: results.some((r) => r.created) ? 201 : 200, body: { results } };
    }),
    route("GET", "/events", {
      operationId: "listEvents", access: { action: "read", audience: "application" }, tag: "Events", summary: "List events",
      description: "Newest first, by type (`eventType`, as on the other lists) and by when they were enqueued (`since` ≤ t < `until`).",
      query: eventQuery,
      responses: { 200: { description: "A page of events.", schema: pageOf("events", eventSummarySchema) } },
    }, async (req, { cursor: c, limit: size, eventType, type, ...filter }) => {
      if (eventType !== undefined && type !== undefined && eventType !== type) {
        throw new HttpError(400, "invalid_request", "Give the event type once, as eventType (type is its former name); they differ here.");
      }
      const before = decodeCursor(c, isStringPair);
      const applicationId = listScope(req, filter.applicationId);
      const { rows, next } = await page(size, (n) => listEvents(db, { ...filter, type: eventType ?? type, applicationId, before, limit: n }), (e) => e.key);
      return { status: 200, body: { events: rows.map(({ key: _key, ...e }) => e), next } };
    }),
    route("GET", "/events/:id", {
      operationId: "getEvent", access: { action: "read", audience: "application", resource: "event" }, tag: "Events", summary: "Get an event with all its deliveries",
      responses: { 200: { description: "The event, its data and body, and every delivery of it (fan-out, resends, tests, backfills).", schema: eventDetailSchema } },
    }, async (req) => ({ status: 200, body: await getEvent(db, req.params.id!) })),
    route("POST", "/events/:id/resend", {
      operationId: "resendEvent", access: { action: "write", audience: "application", resource: "event" }, tag: "Events", summary: "Resend an event",
      description: "Delivered or not, to one of its subscriptions (`subscriptionId`) or to all of them: one new delivery each (origin `resend`, a new `webhook-id`, the same body), on the normal path.",
      body: resendBody, bodyRequired: false,
      responses: {
        201: { description: "The new deliveries.", schema: sendResultSchema },
        409: { description: "That subscription never had this event (or was deleted)." },
      },
    }, async (req) => {
      const { subscriptionId } = bodyOf(resendBody, await optionalJson(req), "resend request");
      return { status: 201, body: await resendEvent(db, req.params.id!, { subscriptionId, requestedBy: actorFor(req) }) };
    }),

    route("GET", "/deliveries", {
      operationId: "listDeliveries", access: { action: "read", audience: "application" }, tag: "Deliveries", summary: "List deliveries", query: deliveryQuery,
      responses: { 200: { description: "A page of deliveries, in id order.", schema: pageOf("deliveries", deliverySchema) } },
    }, async (req, { cursor: c, limit: size, ...filter }) => {
      const after = decodeCursor(c, isString);
      const applicationId = listScope(req, filter.applicationId);
      const { rows, next } = await page(size, (n) => listDeliveries(db, { ...filter, applicationId, after, limit: n }), (d) => d.id);
      return { status: 200, body: { deliveries: rows, next } };
    }),
    route("GET", "/deliveries/:id", { operationId: "getDelivery", access: { action: "read", audience: "application", resource: "delivery" }, tag: "Deliveries", summary: "Get a delivery", responses: delivery },
      async (req) => ({ status: 200, body: await getDelivery(db, req.params.id!) })),
    route("GET", "/deliveries/:id/attempts", {
      operationId: "listAttempts", access: { action: "read", audience: "application", resource: "delivery" }, tag: "Deliveries", summary: "List the attempts of a delivery", query: pageQuery,
      responses: { 200: { description: "A page of attempts, oldest first.", schema: pageOf("attempts", attemptSchema) } },
    }, async (req, { cursor: c, limit: size }) => {
      const after = decodeCursor(c, isAttemptKey);
      const { rows, next } = await page(size, (n) => listAttempts(db, req.params.id!, { after, limit: n }), (a) => a.id);
      return { status: 200, body: { attempts: rows, next } };
    }),

    route("GET", "/dead-letters", {
      operationId: "listDeadLetters", access: { action: "read", audience: "application" }, tag: "Dead letters", summary: "List dead letters",
      description: "By subscription, event type, reason (a prefix: `exhausted`, `permanent`) and when they died (`since` ≤ t < `until`).",
      query: deadLetterQuery,
      responses: { 200: { description: "A page of dead letters, in id order.", schema: pageOf("deadLetters", deliverySchema) } },
    }, async (req, { reason, since, until, cursor: c, limit: size, ...filter }) => {
      const after = decodeCursor(c, isString);
      const applicationId = listScope(req, filter.applicationId);
      const { rows, next } = await page(size, (n) => listDeadLetters(db, { ...filter, applicationId, reasonPrefix: reason, deadSince: since, deadBefore: until, after, limit: n }), (d) => d.id);
      return { status: 200, body: { deadLetters: rows, next } };
    }),
    route("GET", "/dead-letters/count", {
      operationId: "countDeadLetters", access: { action: "read", audience: "application" }, tag: "Dead letters", summary: "Count dead letters",
      description: "How many dead letters the filters of `GET /dead-letters` select: the admin page's count, beyond the page it lists.",
      query: deadLetterFilter,
      responses: { 200: { description: "The count.", schema: countSchema } },
    }, async (req, { reason, since, until, ...filter }) => {
      const applicationId = listScope(req, filter.applicationId);
      return { status: 200, body: { count: await countDeadLetters(db, { ...filter, applicationId, reasonPrefix: reason, deadSince: since, deadBefore: until }) } };
    }),
    // Registered before `/dead-letters/:id…` so `replay` (and `count`) is never read as an id.
    route("POST", "/dead-letters/replay", {
      operationId: "replayDeadLetters", access: { action: "write", audience: "application" }, tag: "Dead letters", summary: "Replay dead letters by ids or by filter",
      description: `Each becomes pending and due now, its attempt count restarted, and the replay is recorded. By \`ids\` (those not dead are skipped), or every one matching \`filter\` up to \`limit\` (at most ${MAX_BULK_REPLAY} per call).`,
      body: bulkReplay,
      responses: { 200: { description: "What was replayed and what was skipped.", schema: replayResultSchema } },
    }, async (req) => {
      const input = bodyOf(bulkReplay, await req.json(), "replay request");
      const selection = "ids" in input
        ? { ids: input.ids }
        : {
          filter: {
            subscriptionId: input.filter.subscriptionId, eventType: input.filter.eventType, reasonPrefix: input.filter.reason,
            deadSince: input.filter.since, deadBefore: input.filter.until,
          },
          limit: input.limit,
        };
      // An application key replays its own application's only (another's ids are skipped, as not dead).
      const applicationId = listScope(req, "filter" in input ? input.filter.applicationId : undefined);
      return { status: 200, body: await replayDeadLetters(db, selection, { requestedBy: actorFor(req), applicationId }) };
    }),
    route("GET", "/dead-letters/:id", {
      operationId: "getDeadLetter", access: { action: "read", audience: "application", resource: "deadLetter" }, tag: "Dead letters", summary: "Get a dead letter with its body, attempts and replays",
      responses: { 200: { description: "The dead letter.", schema: deadLetterSchema } },
    }, async (req) => ({ status: 200, body: await getDeadLetter(db, req.params.id!) })),
    route("POST", "/dead-letters/:id/replay", {
      operationId: "replayDeadLetter", access: { action: "write", audience: "application", resource: "delivery" }, tag: "Dead letters", summary: "Replay one dead letter",
      responses: { ...delivery, 409: { description: "The delivery is not dead (pending, delivered or cancelled)." } },
    }, async (req) => ({ status: 200, body: await replayDeadLetter(db, req.params.id!, { requestedBy: actorFor(req) }) })),

    route("GET", "/subscriptions/:id/ordering-keys", {
      operationId: "listOrderingKeys", access: { action: "read", audience: "application", resource: "subscription" }, tag: "Subscriptions", summary: "List the ordering keys with work (ordered subscriptions)",
      description: "Keys of an ordered subscription whose deliveries are in progress or waiting, in key order: each with its current delivery (`head`), how many wait behind it, and whether a dead letter blocks it (`blocked`: the key waits until that dead letter is replayed or the key is skipped). Idle keys are not listed. `blocked=true` lists only the blocked ones.",
      query: orderingKeyQuery,
      responses: { 200: { description: "A page of keys.", schema: pageOf("orderingKeys", orderingKeySchema) } },
    }, async (req, { blocked, cursor: c, limit: size }) => {
      const after = decodeCursor(c, isString);
      const { rows, next } = await page(size, (n) => listOrderingKeys(db, req.params.id!, { blocked, after, limit: n }), (k) => k.orderingKey);
      return { status: 200, body: { orderingKeys: rows, next } };
    }),
    route("POST", "/subscriptions/:id/ordering-keys/:key/skip", {
      operationId: "skipOrderingKey", access: { action: "write", audience: "application", resource: "subscription" }, tag: "Subscriptions", summary: "Skip the dead letter that blocks an ordering key",
      description: "The key's next delivery goes; the dead letter stays a dead letter (replayed later, it is sent after what the key has by then). Give `deliveryId` (the blocking dead letter, as listed) so that a repeated request cannot skip the next dead letter too. The key goes in the path URL-encoded (`/` as `%2F`).",
      body: skipBody, bodyRequired: false,
      responses: {
        200: { description: "Skipped: which dead letter, and which delivery now goes.", schema: skipResultSchema },
        409: { description: "No dead letter blocks this key (its delivery is pending, or nothing waits), or `deliveryId` is not the one that does." },
      },
    }, async (req) => {
      const key = req.params.key!;
      if (!ORDERING_KEY.test(key)) throw new HttpError(400, "invalid_request", "key: must be 1 to 200 letters, digits, _, ., -, :, /, @, = or + (URL-encoded in the path).", [{ path: "key", message: "not an ordering key" }]);
      const { deliveryId } = bodyOf(skipBody, await optionalJson(req), "skip request");
      return { status: 200, body: await skipOrderingKey(db, req.params.id!, key, { deliveryId }) };
    }),
  ];
}
