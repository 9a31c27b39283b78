/**
 * Subscription routes: create (optionally with a backfill of past events), read, list, edit,
 * pause and resume, delete, re-enable, rotate secrets, and send a test event.
 */
import * as z from "zod/mini";
import type { PlatformContext } from "../../context.js";
import {
  createSubscription, createSubscriptionSchema, deleteSubscription, enableSubscription, getSubscription, listSubscriptions, pauseSubscription,
  resumeSubscription, rotateSecrets, sendTestEvent, updateSubscription,
} from "../../outbound/index.js";
import { getPublicKeys, secretsInputSchema } from "../../outbound/subscriptions.js";
import { subscriptionChangeSchema } from "../../outbound/subscriptionChanges.js";
import { testEventSchema } from "../../outbound/operatorSends.js";
import { createDestinationPolicy, refusalOfUrl } from "../../outbound/destinationPolicy.js";
import type { Subscription } from "../../outbound/subscriptions.js";
import { decodeCursor, isString, page } from "../pagination.js";
import type { Route } from "../router.js";
import { deletedSchema, pageOf, publicKeysSchema, sendResultSchema, subscriptionSchema } from "../schemas.js";
import { cursor, filterText, limit, optionalJson, route } from "./validate.js";
import { actorFor, inApplication, listScope } from "../../tenancy/access.js";

const subscriptionQuery = z.strictObject({
  status: z.optional(z.enum(["active", "degraded", "disabled"])),
  paused: z.optional(z.pipe(z.enum(["true", "false"]), z.transform((v: "true" | "false") => v === "true"))),
  /** Only this application's (an application key sees only its own anyway). */
  applicationId: filterText(),
  limit,
  cursor,
});

const TAG = "Subscriptions";
const one = { 200: { description: "The subscription.", schema: subscriptionSchema } };

export function subscriptionRoutes(ctx: PlatformContext): Route[] {
  const { db, config } = ctx;
  const destinationPolicy = createDestinationPolicy({ allowed: config.ALLOWED_DESTINATIONS.split(",").map((s) => s.trim()).filter(Boolean) });
  const id = (req: { params: Record<string, string> }) => req.params.id!;
  // Its health says when this process's policy refuses its URL (ALLOWED_DESTINATIONS unset since it was made, say).
  const shown = <S extends Subscription>(s: S): S => ({ ...s, health: { ...s.health, destinationRefused: refusalOfUrl(destinationPolicy, s.url) } });
  return [
    route("POST", "/subscriptions", {
      operationId: "createSubscription", access: { action: "write", audience: "application" }, tag: TAG, summary: "Create a subscription",
      description: "It belongs to `applicationId` (default: the default application; an application key's own). A signing secret is generated unless `secrets` are given; the answer is the only one that shows them. With `backfill: { since, until? }`, the past events of that range (by when they were enqueued) whose type matches are sent to it too (at most 100 000).",
      body: createSubscriptionSchema,
      responses: { 201: { description: "Created, with its secrets (and `backfilled`, with a backfill).", schema: subscriptionSchema } },
    }, async (req) => ({ status: 201, body: shown(await createSubscription(db, inApplication(req, await req.json()), { destinationPolicy, requestedBy: actorFor(req) })) })),
    route("GET", "/subscriptions", {
      operationId: "listSubscriptions", access: { action: "read", audience: "application" }, tag: TAG, summary: "List subscriptions",
      description: "In id order; deleted ones are left out. `status` is the health; `paused` whether an operator paused it.",
      query: subscriptionQuery,
      responses: { 200: { description: "A page of subscriptions.", schema: pageOf("subscriptions", subscriptionSchema) } },
    }, async (req, { cursor: c, limit: size, ...filter }) => {
      const after = decodeCursor(c, isString);
      const applicationId = listScope(req, filter.applicationId);
      const { rows, next } = await page(size, (n) => listSubscriptions(db, { ...filter, applicationId, after, limit: n }), (s) => s.id);
      return { status: 200, body: { subscriptions: rows.map(shown), next } };
    }),
    route("GET", "/subscriptions/:id", { operationId: "getSubscription", access: { action: "read", audience: "application", resource: "subscription" }, tag: TAG, summary: "Get a subscription", responses: one },
      async (req) => ({ status: 200, body: shown(await getSubscription(db, id(req))) })),
    route("PATCH", "/subscriptions/:id", {
      operationId: "updateSubscription", access: { action: "write", audience: "application", resource: "subscription" }, tag: TAG, summary: "Edit a subscription",
      description: "Changes the fields given; `null` puts a field back to its default. Pending deliveries use the new settings from their next attempt; one in flight finishes with the old. A new `url` starts its health afresh and makes its waiting deliveries due at once. `headers` replaces all custom headers (never `webhook-*`, `host`, `content-length`, `content-type`, `user-agent` or hop-by-hop headers).",
      body: subscriptionChangeSchema(),
      responses: one,
    }, async (req) => ({ status: 200, body: shown(await updateSubscription(db, id(req), await req.json(), { destinationPolicy })) })),
    route("DELETE", "/subscriptions/:id", {
      operationId: "deleteSubscription", access: { action: "write", audience: "application", resource: "subscription" }, tag: TAG, summary: "Delete a subscription",
      description: "It gets no new deliveries; its pending ones are cancelled (status `cancelled`, kept with their attempts as history). An attempt in flight finishes; its outcome is logged and not applied, so it is never retried.",
      responses: { 200: { description: "Deleted.", schema: deletedSchema } },
    }, async (req) => ({ status: 200, body: await deleteSubscription(db, id(req)) })),
    route("POST", "/subscriptions/:id/pause", {
      operationId: "pauseSubscription", access: { action: "write", audience: "application", resource: "subscription" }, tag: TAG, summary: "Pause a subscription",
      description: "Nothing is sent to it until it is resumed; new events still make deliveries for it, kept pending. An attempt in flight finishes and is recorded.",
      responses: one,
    }, async (req) => ({ status: 200, body: shown(await pauseSubscription(db, id(req))) })),
    route("POST", "/subscriptions/:id/resume", {
      operationId: "resumeSubscription", access: { action: "write", audience: "application", resource: "subscription" }, tag: TAG, summary: "Resume a paused subscription",
      description: "Its waiting deliveries are due at once; one disabled by the circuit breaker is probed at once.",
      responses: one,
    }, async (req) => ({ status: 200, body: shown(await resumeSubscription(db, id(req))) })),
    route("POST", "/subscriptions/:id/enable", {
      operationId: "enableSubscription", access: { action: "write", audience: "application", resource: "subscription" }, tag: TAG, summary: "Re-enable a disabled subscription",
      description: "After 410 Gone, or to close the circuit before the next probe: active, failures reset, kept deliveries due at once.",
      responses: one,
    }, async (req) => ({ status: 200, body: shown(await enableSubscription(db, id(req))) })),
    route("POST", "/subscriptions/:id/secrets", {
      operationId: "rotateSecrets", access: { action: "write", audience: "application", resource: "subscription" }, tag: TAG, summary: "Rotate signing secrets",
      description: "Without a body, a new secret is generated and put first, and the newest current one kept (deliveries are signed with both); it signs like the newest one, or by `signatureScheme` (`v1a`: an ed25519 `whsk_` key, so a v1 subscription sends both signatures meanwhile). With `secrets`, they replace the current ones.",
      body: secretsInputSchema, bodyRequired: false,
      responses: { 200: { description: "The subscription with its secrets.", schema: subscriptionSchema } },
    }, async (req) => ({ status: 200, body: shown(await rotateSecrets(db, id(req), await optionalJson(req))) })),
    route("GET", "/subscriptions/:id/public-keys", {
      operationId: "getPublicKeys", access: { action: "read", audience: "application", resource: "subscription" }, tag: TAG, summary: "Get the v1a public keys",
      description: "The `whpk_…` ed25519 public keys a receiver verifies this subscription's `v1a` signatures with (newest first; two during a rotation). Empty for a subscription that signs with `v1` (HMAC) only. Public: safe to hand to the receiver.",
      responses: { 200: { description: "The public keys.", schema: publicKeysSchema } },
    }, async (req) => ({ status: 200, body: await getPublicKeys(db, id(req)) })),
    route("POST", "/subscriptions/:id/test", {
      operationId: "sendTestEvent", access: { action: "write", audience: "application", resource: "subscription" }, tag: TAG, summary: "Send a test event",
      description: "A new event (type `webhooks.test` unless `type` is given) delivered to this subscription only, whatever its event types, through the normal path.",
      body: testEventSchema, bodyRequired: false,
      responses: { 201: { description: "The test event and its delivery.", schema: sendResultSchema } },
    }, async (req) => ({
      status: 201,
      body: await sendTestEvent(db, id(req), await optionalJson(req), { maxPayloadBytes: config.MAX_PAYLOAD_BYTES, requestedBy: actorFor(req) }),
    })),
  ];
}
