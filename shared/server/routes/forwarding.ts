/**
 * Inbound forwarding's routes (issue 30 item 4, docs/inbound-partners.md): a forwarding partner's
 * destinations, each with a filter and a transformation. Operator-only, like the partners and the
 * platform application's subscriptions they are made of (shared/inbound/forwardDestinations.ts).
 */
import * as z from "zod/mini";
import type { PlatformContext } from "../../context.js";
import {
  addForwardDestination, ForwardDestinationConflictError, forwardDestinationChangeSchema, ForwardingDisabledError, getForwarding, listForwarding,
  newForwardDestinationSchema, removeForwardDestination, updateForwardDestination,
} from "../../inbound/forwardDestinations.js";
import { loadPartners, type PartnerConfig } from "../../inbound/verify/index.js";
import { createDestinationPolicy } from "../../outbound/destinationPolicy.js";
import { HttpError, type Request, type Response, type Route } from "../router.js";
import { route } from "./validate.js";

const TAG = "Inbound forwarding";
const nullableText = z.nullable(z.string());

export const forwardDestinationSchema = z.strictObject({
  name: z.string(),
  subscriptionId: z.string().check(z.describe("The outbound subscription that delivers to it: its deliveries, attempts, health and dead letters, its other settings (PATCH /subscriptions/:id) and secret rotation.")),
  source: z.enum(["config", "api"]).check(z.describe("`config`: the `default` destination, the partner's forward.url in PARTNERS (changed there); `api`: added here.")),
  url: z.string(),
  filter: z.nullable(z.record(z.string(), z.unknown())).check(z.describe("Content filter (docs/filters.md) on the partner's event as {id, type, timestamp, data: the partner's JSON body}; null: every event.")),
  transformation: nullableText,
  description: nullableText,
  status: z.enum(["active", "degraded", "disabled"]),
  paused: z.boolean(),
  secrets: z.optional(z.array(z.string())),
  warnings: z.optional(z.array(z.string())),
});
export const forwardingSchema = z.strictObject({
  partner: z.string(),
  enabled: z.boolean().check(z.describe("Whether the partner's PARTNERS entry has `forward` (a url, or `true`): only then are its events forwarded.")),
  destinations: z.array(forwardDestinationSchema),
});
const removedSchema = z.strictObject({ name: z.string(), subscriptionId: z.string(), cancelledDeliveries: z.number().check(z.int()) });

/** The partner's forwarding errors as HTTP answers; the others are the shared mapping's (validation 400, not found 404). */
async function answering(work: () => Promise<Response>): Promise<Response> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ForwardingDisabledError) throw new HttpError(409, "forwarding_disabled", error.message);
    if (error instanceof ForwardDestinationConflictError) throw new HttpError(409, "conflict", error.message);
    throw error;
  }
}

export function forwardingRoutes(ctx: PlatformContext): Route[] {
  const { db, config } = ctx;
  // Read when first asked (a host serving only the management API may have no PARTNERS at all).
  let partners: ReadonlyMap<string, PartnerConfig> | undefined;
  const known = () => (partners ??= loadPartners({ PARTNERS: config.PARTNERS, PARTNERS_FILE: config.PARTNERS_FILE }));
  const destinationPolicy = createDestinationPolicy({ allowed: config.ALLOWED_DESTINATIONS.split(",").map((s) => s.trim()).filter(Boolean) });
  const partner = (req: Request) => req.params.partner!;
  const name = (req: Request) => req.params.name!;
  const conflict = { 409: { description: "The partner does not forward (`forward_disabled`: set `forward` in PARTNERS), the name is taken, or `default` is changed here instead of in PARTNERS." } };
  return [
    route("GET", "/inbound/forwarding", {
      operationId: "listForwarding", access: { action: "read", audience: "operator" }, tag: TAG, summary: "List the forwarding partners and their destinations",
      description: "Every partner whose PARTNERS entry has `forward`, by name, each as `GET /inbound/partners/:partner/forwarding` answers it.",
      responses: { 200: { description: "The forwarding partners.", schema: z.strictObject({ partners: z.array(forwardingSchema) }) } },
    }, async () => ({ status: 200, body: { partners: await listForwarding(db, known()) } })),
    route("GET", "/inbound/partners/:partner/forwarding", {
      operationId: "getForwarding", access: { action: "read", audience: "operator" }, tag: TAG, summary: "Get a partner's forwarding and its destinations",
      description: "Whether the partner forwards, and each destination by name with its URL, filter, transformation and health. Which destinations took one event, and which skipped it: `forwarding` of `GET /inbox/:id`.",
      responses: { 200: { description: "The forwarding.", schema: forwardingSchema } },
    }, async (req) => ({ status: 200, body: await getForwarding(db, known(), partner(req)) })),
    route("POST", "/inbound/partners/:partner/forwarding/destinations", {
      operationId: "addForwardDestination", access: { action: "write", audience: "operator" }, tag: TAG, summary: "Add a forward destination",
      description: "Events of the partner stored from now on are forwarded to `url` when `filter` matches them (docs/filters.md; on {id, type, timestamp, data: the partner's body}), transformed by `transformation` if given (docs/transformations.md; it receives the partner's body). A signing secret is generated unless `secrets` are given; this answer is the only one that shows it.",
      body: newForwardDestinationSchema,
      responses: { 201: { description: "Added, with its secrets.", schema: forwardDestinationSchema }, ...conflict },
    }, (req) => answering(async () => ({ status: 201, body: await addForwardDestination(db, known(), partner(req), await req.json(), { destinationPolicy }) }))),
    route("PATCH", "/inbound/partners/:partner/forwarding/destinations/:name", {
      operationId: "updateForwardDestination", access: { action: "write", audience: "operator" }, tag: TAG, summary: "Change a forward destination",
      description: "Changes the fields given; `filter: null` or `transformation: null` removes it. Applies to events stored from its commit on.",
      body: forwardDestinationChangeSchema,
      responses: { 200: { description: "The destination.", schema: forwardDestinationSchema }, ...conflict },
    }, (req) => answering(async () => ({ status: 200, body: await updateForwardDestination(db, known(), partner(req), name(req), await req.json(), { destinationPolicy }) }))),
    route("DELETE", "/inbound/partners/:partner/forwarding/destinations/:name", {
      operationId: "removeForwardDestination", access: { action: "write", audience: "operator" }, tag: TAG, summary: "Remove a forward destination",
      description: "Its subscription is deleted: its pending deliveries cancelled, its history kept (listable by `subscriptionId`).",
      responses: { 200: { description: "Removed.", schema: removedSchema }, ...conflict },
    }, (req) => answering(async () => ({ status: 200, body: await removeForwardDestination(db, known(), partner(req), name(req)) }))),
  ];
}
