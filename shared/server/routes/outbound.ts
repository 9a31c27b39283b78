/**
 * Management routes of outbound events, deliveries and dead letters (all behind the admin bearer
 * token; subscriptions are in ./subscriptions.ts). Input is validated with zod; typed errors of the
 * core become precise 4xx answers; every list pages the same way (../pagination.ts).
 */
import * as z from "zod/mini";
import type { PlatformContext } from "../../platform.js";
import {
  enqueue, enqueueMany, getDeadLetter, getDelivery, getEvent, listAttempts, listDeadLetters, listDeliveries, listEvents,
  MAX_BULK_REPLAY, MAX_EVENTS_PER_BATCH, replayDeadLetter, replayDeadLetters, resendEvent,
} from "../../outbound/index.js";
import { decodeCursor, isString, isStringPair, page } from "../pagination.js";
import { HttpError, type Route } from "../router.js";
import { bodyOf, cursor, filterText, limit, optionalJson, queryOf, route, time } from "./validate.js";

const deliveryQuery = z.strictObject({
  status: z.optional(z.enum(["pending", "delivered", "dead", "cancelled"])),
  subscriptionId: filterText(),
  eventId: filterText(),
  eventType: filterText(),
  limit,
  cursor,
});
const pageQuery = z.strictObject({ limit, cursor });
const eventQuery = z.strictObject({ type: filterText(), since: time(), until: time(), limit, cursor });
/** Dead letters by subscription, event type, reason (prefix) and when they died (`since` ≤ dead at < `until`). */
const deadLetterFilter = z.strictObject({
  subscriptionId: filterText(),
  eventType: filterText(),
  reason: filterText(),
  since: time(),
  until: time(),
});
const deadLetterQuery = z.extend(deadLetterFilter, { limit, cursor });
const bulkReplay = z.union([
  z.strictObject({ ids: z.array(z.string().check(z.minLength(1), z.maxLength(500))).check(z.minLength(1, "list at least one id"), z.maxLength(MAX_BULK_REPLAY)) }),
  z.strictObject({ filter: deadLetterFilter, limit: z.optional(z.number().check(z.int(), z.gte(1), z.lte(MAX_BULK_REPLAY))) }),
], { error: `send { "ids": [...] } or { "filter": { "subscriptionId"?, "eventType"?, "reason"?, "since"?, "until"? }, "limit"? }` });
const resendBody = z.strictObject({ subscriptionId: z.optional(z.string().check(z.minLength(1), z.maxLength(200))) });

const isAttemptKey = (v: unknown): v is number => Number.isSafeInteger(v);

export function outboundRoutes(ctx: PlatformContext): Route[] {
  const { db, config } = ctx;
  const requestedBy = "admin-api";
  const options = { maxPayloadBytes: config.MAX_PAYLOAD_BYTES };
  return [
    route("POST", "/events", async (req) => {
      const event = await req.json();
      if (typeof event !== "object" || event === null || Array.isArray(event)) {
        throw new HttpError(400, "invalid_request", "The body must be a JSON object { id?, type, data, occurredAt? }.");
      }
      const result = await db.transaction((tx) => enqueue(tx, event as Parameters<typeof enqueue>[1], options));
      return { status: result.created ? 201 : 200, body: result };
    }),
    route("POST", "/events/batch", async (req) => {
      const input = await req.json();
      const events = (input as { events?: unknown } | null)?.events;
      if (typeof input !== "object" || input === null || Array.isArray(input) || !Array.isArray(events) || Object.keys(input).length !== 1) {
        throw new HttpError(400, "invalid_request", `The body must be a JSON object { "events": [ { id?, type, data, occurredAt? }, … ] } with at most ${MAX_EVENTS_PER_BATCH} events.`);
      }
      const results = await db.transaction((tx) => enqueueMany(tx, events as Parameters<typeof enqueueMany>[1], options));
      return { status: results.some((r) => r.created) ? 201 : 200, body: { results } };
    }),
    route("GET", "/events", async (req) => {
      const { cursor: c, limit: size, ...filter } = queryOf(req, eventQuery);
      const before = decodeCursor(c, isStringPair);
      const { rows, next } = await page(size, (n) => listEvents(db, { ...filter, before, limit: n }), (e) => e.key);
      return { status: 200, body: { events: rows.map(({ key: _key, ...e }) => e), next } };
    }),
    route("GET", "/events/:id", async (req) => ({ status: 200, body: await getEvent(db, req.params.id!) })),
    route("POST", "/events/:id/resend", async (req) => {
      const { subscriptionId } = bodyOf(resendBody, await optionalJson(req), "resend request");
      return { status: 201, body: await resendEvent(db, req.params.id!, { subscriptionId, requestedBy }) };
    }),

    route("GET", "/deliveries", async (req) => {
      const { cursor: c, limit: size, ...filter } = queryOf(req, deliveryQuery);
      const after = decodeCursor(c, isString);
      const { rows, next } = await page(size, (n) => listDeliveries(db, { ...filter, after, limit: n }), (d) => d.id);
      return { status: 200, body: { deliveries: rows, next } };
    }),
    route("GET", "/deliveries/:id", async (req) => ({ status: 200, body: await getDelivery(db, req.params.id!) })),
    route("GET", "/deliveries/:id/attempts", async (req) => {
      const { cursor: c, limit: size } = queryOf(req, pageQuery);
      const after = decodeCursor(c, isAttemptKey);
      const { rows, next } = await page(size, (n) => listAttempts(db, req.params.id!, { after, limit: n }), (a) => a.id);
      return { status: 200, body: { attempts: rows, next } };
    }),

    route("GET", "/dead-letters", async (req) => {
      const { reason, since, until, cursor: c, limit: size, ...filter } = queryOf(req, deadLetterQuery);
      const after = decodeCursor(c, isString);
      const { rows, next } = await page(size, (n) => listDeadLetters(db, { ...filter, reasonPrefix: reason, deadSince: since, deadBefore: until, after, limit: n }), (d) => d.id);
      return { status: 200, body: { deadLetters: rows, next } };
    }),
    // Registered before `/dead-letters/:id…` so `replay` is never read as an id.
    route("POST", "/dead-letters/replay", async (req) => {
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
      return { status: 200, body: await replayDeadLetters(db, selection, { requestedBy }) };
    }),
    route("GET", "/dead-letters/:id", async (req) => ({ status: 200, body: await getDeadLetter(db, req.params.id!) })),
    route("POST", "/dead-letters/:id/replay", async (req) => ({ status: 200, body: await replayDeadLetter(db, req.params.id!, { requestedBy }) })),
  ];
}
