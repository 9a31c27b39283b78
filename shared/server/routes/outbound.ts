/**
 * Management routes of outbound delivery (all behind the admin bearer token). Input is validated
 * with zod; typed errors of the core become precise 4xx answers.
 */
import * as z from "zod/mini";
import { safeParse } from "../../safeParse.js";
import type { PlatformContext } from "../../platform.js";
import { HttpError, type Request, type Route } from "../router.js";
import {
  createSubscription, enableSubscription, enqueue, enqueueMany, EventConflictError, getDeadLetter, getDelivery, getSubscription,
  listAttempts, listDeadLetters, rotateSecrets, listDeliveries, listSubscriptions, MAX_BULK_REPLAY, MAX_EVENTS_PER_BATCH, NotADeadLetterError, NotFoundError,
  OutboundValidationError, PayloadTooLargeError, replayDeadLetter, replayDeadLetters,
} from "../../outbound/index.js";
import { formatPath } from "../../outbound/validation.js";
import { createDestinationPolicy } from "../../outbound/destinationPolicy.js";

/** Our typed errors as HTTP answers; anything else goes to the router (503 for a database outage, else 500). */
function toHttpError(error: unknown): unknown {
  if (error instanceof PayloadTooLargeError) return new HttpError(413, "payload_too_large", error.message, { sizeBytes: error.sizeBytes, limitBytes: error.limitBytes });
  if (error instanceof OutboundValidationError) return new HttpError(400, "invalid_request", error.message, error.issues);
  if (error instanceof EventConflictError) return new HttpError(409, "event_conflict", error.message, { eventId: error.eventId });
  if (error instanceof NotFoundError) return new HttpError(404, "not_found", error.message, { entity: error.entity, id: error.id });
  if (error instanceof NotADeadLetterError) return new HttpError(409, "not_a_dead_letter", error.message, { id: error.deliveryId, status: error.status });
  // SQLSTATE class 22 (data exception): a value PostgreSQL cannot take, such as a NUL character.
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code.startsWith("22")) {
    return new HttpError(400, "invalid_request", "A value in the request cannot be stored (for example a NUL character); remove it and retry.");
  }
  return error;
}

function route(method: Route["method"], path: string, handler: Route["handler"]): Route {
  return {
    method,
    path,
    auth: "admin",
    handler: async (req) => {
      try {
        return await handler(req);
      } catch (error) {
        throw toHttpError(error);
      }
    },
  };
}

/** Parses the query string with `schema`; unknown parameters are refused so typos do not pass silently. */
function queryOf<S extends z.core.$ZodType>(req: Request, schema: S): z.infer<S> {
  const raw: Record<string, string> = {};
  for (const [key, value] of req.query) {
    if (key in raw) throw new HttpError(400, "invalid_request", `Query parameter ${key} is given twice; give it once.`);
    raw[key] = value;
  }
  const parsed = safeParse(schema, raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message }));
    throw new HttpError(400, "invalid_request", `Invalid query: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}.`, issues);
  }
  return parsed.data;
}

function bodyOf<S extends z.core.$ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const parsed = safeParse(schema, input);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message }));
    throw new HttpError(400, "invalid_request", `Invalid ${what}: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}.`, issues);
  }
  return parsed.data;
}

const limit = z.optional(z.coerce.number().check(z.int(), z.gte(1), z.lte(1000)));
const cursor = z.optional(z.string().check(z.minLength(1), z.maxLength(500)));
/** An optional text filter of 1 to 200 characters. */
const filterText = () => z.optional(z.string().check(z.minLength(1), z.maxLength(200)));
const subscriptionQuery = z.strictObject({ status: z.optional(z.enum(["active", "degraded", "disabled"])), limit, after: cursor });
const deliveryQuery = z.strictObject({
  status: z.optional(z.enum(["pending", "delivered", "dead"])),
  subscriptionId: filterText(),
  eventId: filterText(),
  eventType: filterText(),
  limit,
  after: cursor,
});
const deadLetterFilter = z.strictObject({
  subscriptionId: filterText(),
  eventType: filterText(),
  reason: filterText(),
});
const deadLetterQuery = z.extend(deadLetterFilter, { limit, after: cursor });
const bulkReplay = z.union([
  z.strictObject({ ids: z.array(z.string().check(z.minLength(1), z.maxLength(500))).check(z.minLength(1, "list at least one id"), z.maxLength(MAX_BULK_REPLAY)) }),
  z.strictObject({ filter: deadLetterFilter, limit: z.optional(z.number().check(z.int(), z.gte(1), z.lte(MAX_BULK_REPLAY))) }),
], { error: `send { "ids": [...] } or { "filter": { "subscriptionId"?, "eventType"?, "reason"? }, "limit"? }` });

export function outboundRoutes(ctx: PlatformContext): Route[] {
  const { db, config } = ctx;
  const requestedBy = "admin-api";
  const destinationPolicy = createDestinationPolicy({ allowed: config.ALLOWED_DESTINATIONS.split(",").map((s) => s.trim()).filter(Boolean) });
  return [
    route("POST", "/subscriptions", async (req) => ({ status: 201, body: await createSubscription(db, await req.json(), { destinationPolicy }) })),
    route("GET", "/subscriptions", async (req) => ({ status: 200, body: { subscriptions: await listSubscriptions(db, queryOf(req, subscriptionQuery)) } })),
    route("GET", "/subscriptions/:id", async (req) => ({ status: 200, body: await getSubscription(db, req.params.id!) })),
    route("POST", "/subscriptions/:id/enable", async (req) => ({ status: 200, body: await enableSubscription(db, req.params.id!) })),
    route("POST", "/subscriptions/:id/secrets", async (req) => {
      const raw = await req.body();
      return { status: 200, body: await rotateSecrets(db, req.params.id!, raw.length === 0 ? {} : await req.json()) };
    }),

    route("POST", "/events", async (req) => {
      const event = await req.json();
      if (typeof event !== "object" || event === null || Array.isArray(event)) {
        throw new HttpError(400, "invalid_request", "The body must be a JSON object { id?, type, data, occurredAt? }.");
      }
      const result = await db.transaction((tx) => enqueue(tx, event as Parameters<typeof enqueue>[1], { maxPayloadBytes: config.MAX_PAYLOAD_BYTES }));
      return { status: result.created ? 201 : 200, body: result };
    }),

    route("POST", "/events/batch", async (req) => {
      const input = await req.json();
      const events = (input as { events?: unknown } | null)?.events;
      if (typeof input !== "object" || input === null || Array.isArray(input) || !Array.isArray(events) || Object.keys(input).length !== 1) {
        throw new HttpError(400, "invalid_request", `The body must be a JSON object { "events": [ { id?, type, data, occurredAt? }, … ] } with at most ${MAX_EVENTS_PER_BATCH} events.`);
      }
      const results = await db.transaction((tx) => enqueueMany(tx, events as Parameters<typeof enqueueMany>[1], { maxPayloadBytes: config.MAX_PAYLOAD_BYTES }));
      return { status: results.some((r) => r.created) ? 201 : 200, body: { results } };
    }),

    route("GET", "/deliveries", async (req) => ({ status: 200, body: { deliveries: await listDeliveries(db, queryOf(req, deliveryQuery)) } })),
    route("GET", "/deliveries/:id", async (req) => ({ status: 200, body: await getDelivery(db, req.params.id!) })),
    route("GET", "/deliveries/:id/attempts", async (req) => ({ status: 200, body: { attempts: await listAttempts(db, req.params.id!) } })),

    route("GET", "/dead-letters", async (req) => {
      const { reason, ...rest } = queryOf(req, deadLetterQuery);
      return { status: 200, body: { deadLetters: await listDeadLetters(db, { ...rest, reasonPrefix: reason }) } };
    }),
    // Registered before `/dead-letters/:id…` so `replay` is never read as an id.
    route("POST", "/dead-letters/replay", async (req) => {
      const input = bodyOf(bulkReplay, await req.json(), "replay request");
      const selection = "ids" in input
        ? { ids: input.ids }
        : { filter: { subscriptionId: input.filter.subscriptionId, eventType: input.filter.eventType, reasonPrefix: input.filter.reason }, limit: input.limit };
      return { status: 200, body: await replayDeadLetters(db, selection, { requestedBy }) };
    }),
    route("GET", "/dead-letters/:id", async (req) => ({ status: 200, body: await getDeadLetter(db, req.params.id!) })),
    route("POST", "/dead-letters/:id/replay", async (req) => ({ status: 200, body: await replayDeadLetter(db, req.params.id!, { requestedBy }) })),
  ];
}
