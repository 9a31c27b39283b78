/**
 * Subscription routes: create (optionally with a backfill of past events), read, list, edit,
 * pause and resume, delete, re-enable, rotate secrets, and send a test event.
 */
import * as z from "zod/mini";
import type { PlatformContext } from "../../platform.js";
import {
  createSubscription, deleteSubscription, enableSubscription, getSubscription, listSubscriptions, pauseSubscription,
  resumeSubscription, rotateSecrets, sendTestEvent, updateSubscription,
} from "../../outbound/index.js";
import { createDestinationPolicy } from "../../outbound/destinationPolicy.js";
import { decodeCursor, isString, page } from "../pagination.js";
import type { Route } from "../router.js";
import { cursor, limit, optionalJson, queryOf, route } from "./validate.js";

const subscriptionQuery = z.strictObject({
  status: z.optional(z.enum(["active", "degraded", "disabled"])),
  paused: z.optional(z.pipe(z.enum(["true", "false"]), z.transform((v: "true" | "false") => v === "true"))),
  limit,
  cursor,
});

export function subscriptionRoutes(ctx: PlatformContext): Route[] {
  const { db, config } = ctx;
  const requestedBy = "admin-api";
  const destinationPolicy = createDestinationPolicy({ allowed: config.ALLOWED_DESTINATIONS.split(",").map((s) => s.trim()).filter(Boolean) });
  const id = (req: { params: Record<string, string> }) => req.params.id!;
  return [
    route("POST", "/subscriptions", async (req) => ({ status: 201, body: await createSubscription(db, await req.json(), { destinationPolicy, requestedBy }) })),
    route("GET", "/subscriptions", async (req) => {
      const { cursor: c, limit: size, ...filter } = queryOf(req, subscriptionQuery);
      const after = decodeCursor(c, isString);
      const { rows, next } = await page(size, (n) => listSubscriptions(db, { ...filter, after, limit: n }), (s) => s.id);
      return { status: 200, body: { subscriptions: rows, next } };
    }),
    route("GET", "/subscriptions/:id", async (req) => ({ status: 200, body: await getSubscription(db, id(req)) })),
    route("PATCH", "/subscriptions/:id", async (req) => ({ status: 200, body: await updateSubscription(db, id(req), await req.json(), { destinationPolicy }) })),
    route("DELETE", "/subscriptions/:id", async (req) => ({ status: 200, body: await deleteSubscription(db, id(req)) })),
    route("POST", "/subscriptions/:id/pause", async (req) => ({ status: 200, body: await pauseSubscription(db, id(req)) })),
    route("POST", "/subscriptions/:id/resume", async (req) => ({ status: 200, body: await resumeSubscription(db, id(req)) })),
    route("POST", "/subscriptions/:id/enable", async (req) => ({ status: 200, body: await enableSubscription(db, id(req)) })),
    route("POST", "/subscriptions/:id/secrets", async (req) => ({ status: 200, body: await rotateSecrets(db, id(req), await optionalJson(req)) })),
    route("POST", "/subscriptions/:id/test", async (req) => ({
      status: 201,
      body: await sendTestEvent(db, id(req), await optionalJson(req), { maxPayloadBytes: config.MAX_PAYLOAD_BYTES, requestedBy }),
    })),
  ];
}
