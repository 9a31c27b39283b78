/**
 * The pull mode behind `webhooks listen` (docs/listen.md): attach a listener to a subscription,
 * pull its due deliveries by long poll (leased, signed as the relay signs them), answer with what
 * the local receiver said, keep it alive with heartbeats, detach. A long poll rather than a
 * stream: every host serves it, the cloud functions included, each request ending well within
 * API Gateway's 29 s and the other ingresses' limits (MAX_WAIT_SECONDS).
 */
import * as z from "zod/mini";
import type { PlatformContext } from "../../context.js";
import {
  attachListener, claimForListener, DEFAULT_LISTENER_LEASE_SECONDS, detachListener, listListeners, ListenerGoneError, LISTENER_EXCERPT_BYTES,
  MAX_LISTENER_BATCH, MAX_LISTENER_LEASE_SECONDS, MIN_LISTENER_LEASE_SECONDS, recordListenerAnswers, renewListener, type ListenerPolicy,
} from "../../outbound/listeners.js";
import { DEFAULT_RETRY_POLICY } from "../../outbound/retryPolicy.js";
import { HttpError, type Request, type Route } from "../router.js";
import { actorFor } from "../../tenancy/access.js";
import { bodyOf, optionalJson, route } from "./validate.js";

/**
 * Longest a pull waits for a delivery. API Gateway (AWS) ends a request at 29–30 s, Google's API
 * Gateway in front of Cloud Run at its 30 s deadline (stacks/gcp/apiGatewayIngress.ts); Azure's
 * front end allows 230 s. 25 s leaves room for a cold start and the claim itself.
 */
export const MAX_WAIT_SECONDS = 25;
export const DEFAULT_WAIT_SECONDS = 20;
/** How often a waiting pull looks for due deliveries. */
const LOOK_EVERY_MS = 500;

const TAG = "Listen";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const time = z.iso.datetime();
const int = z.number().check(z.int());
const deliveryIds = z.array(z.string().check(z.minLength(1), z.maxLength(500))).check(z.maxLength(MAX_LISTENER_BATCH * 5));

const attachBody = z.strictObject({
  forwardTo: z.optional(z.string().check(z.minLength(1), z.maxLength(2000), z.describe("Where the listener forwards (shown to operators; the platform never calls it)."))),
  leaseSeconds: z.optional(int.check(z.gte(MIN_LISTENER_LEASE_SECONDS), z.lte(MAX_LISTENER_LEASE_SECONDS), z.describe(`Lease of the deliveries it holds, and how long it stays attached without a heartbeat. Default ${DEFAULT_LISTENER_LEASE_SECONDS}.`))),
});
const pullBody = z.strictObject({
  waitSeconds: z.optional(z.number().check(z.gte(0), z.lte(MAX_WAIT_SECONDS), z.describe(`How long to wait for a due delivery (0–${MAX_WAIT_SECONDS}, default ${DEFAULT_WAIT_SECONDS}).`))),
  limit: z.optional(int.check(z.gte(1), z.lte(MAX_LISTENER_BATCH), z.describe(`Most deliveries to take (default 10, at most ${MAX_LISTENER_BATCH}).`))),
});
const heartbeatBody = z.strictObject({ holding: z.optional(deliveryIds.check(z.describe("Deliveries still being forwarded: their leases are renewed too."))) });
const answerSchema = z.strictObject({
  deliveryId: z.string().check(z.minLength(1), z.maxLength(500)),
  status: z.nullable(int.check(z.gte(100), z.lte(599), z.describe("The local receiver's HTTP status; null when it did not answer."))),
  error: z.optional(z.nullable(z.enum(["connection_refused", "connection_reset", "timeout", "dns_failure", "network_error", "invalid_request"]))),
  durationMs: z.number().check(z.gte(0), z.lte(3_600_000)),
  responseExcerpt: z.optional(z.nullable(z.string().check(z.maxLength(LISTENER_EXCERPT_BYTES * 4)))),
  responseHeaders: z.optional(z.nullable(z.record(z.string().check(z.maxLength(200)), z.string().check(z.maxLength(8192))))),
});
const answersBody = z.strictObject({ answers: z.array(answerSchema).check(z.minLength(1, "answer at least one delivery"), z.maxLength(MAX_LISTENER_BATCH * 5)) });

const listenerSchema = z.strictObject({
  id: z.string(), subscriptionId: z.string(), forwardTo: z.nullable(z.string()), leaseSeconds: int, createdAt: time, expiresAt: time,
});
const attachedSchema = z.extend(listenerSchema, {
  subscription: z.strictObject({ eventTypes: z.array(z.string()), url: z.string(), paused: z.boolean(), status: z.string() }),
  otherListeners: int,
  maxWaitSeconds: int,
});
const listenedDeliverySchema = z.strictObject({
  id: z.string(), eventId: z.string(), eventType: z.string(), attempt: int,
  headers: z.record(z.string(), z.string()).check(z.describe("Send them as they are: content-type, user-agent, the Standard Webhooks webhook-id, webhook-timestamp and webhook-signature, and the subscription's own headers.")),
  body: z.string().check(z.describe("The exact bytes signed.")),
});
const recordedSchema = z.strictObject({
  deliveryId: z.string(),
  outcome: z.enum(["delivered", "retrying", "dead", "stale"]),
  retryInSeconds: z.nullable(z.number()),
  deadReason: z.nullable(z.string()),
});
const gone = { 410: { description: "`listener_gone`: the listener detached, or missed its heartbeats for a lease; its deliveries went back. Attach again." } };

export function listenerRoutes(ctx: PlatformContext): Route[] {
  const { db, config } = ctx;
  const policy: ListenerPolicy = { retry: { ...DEFAULT_RETRY_POLICY, maxAttempts: config.OUTBOUND_MAX_ATTEMPTS } };
  const ids = (req: Request) => {
    const listenerId = req.params.listenerId!;
    if (!UUID.test(listenerId)) throw new HttpError(404, "not_found", `No listener with id ${JSON.stringify(listenerId)}.`);
    return { subscriptionId: req.params.id!, listenerId };
  };
  /** ListenerGoneError as its 410; the rest to the route's own mapping. */
  const mapped = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof ListenerGoneError) throw new HttpError(410, "listener_gone", error.message, { listenerId: error.listenerId });
      throw error;
    }
  };
  const access = (action: "read" | "write") => ({ action, audience: "application", resource: "subscription" }) as const;
  /** Pulls, heartbeats and answers come every few seconds: not audited (the attempt log has what they did). */
  const repeated = { ...access("write"), audited: false } as const;
  return [
    route("POST", "/subscriptions/:id/listeners", {
      operationId: "attachListener", access: access("write"), tag: TAG, summary: "Attach a listener (webhooks listen)",
      description: "From now until it detaches or misses its heartbeats for `leaseSeconds`, the relays send this subscription nothing: its deliveries go to the listener, which pulls them (`POST …/listeners/{listenerId}/pull`). Several listeners of one subscription share its deliveries. Heartbeat every third of the lease.",
      body: attachBody, bodyRequired: false,
      responses: { 201: { description: "Attached.", schema: attachedSchema } },
    }, async (req) => {
      const input = bodyOf(attachBody, await optionalJson(req), "listener");
      const listener = await attachListener(db, req.params.id!, { ...input, createdBy: actorFor(req) });
      return { status: 201, body: { ...listener, maxWaitSeconds: MAX_WAIT_SECONDS } };
    }),
    route("GET", "/subscriptions/:id/listeners", {
      operationId: "listListeners", access: access("read"), tag: TAG, summary: "List the listeners attached",
      responses: { 200: { description: "The live listeners (oldest first).", schema: z.strictObject({ listeners: z.array(listenerSchema) }) } },
    }, async (req) => ({ status: 200, body: { listeners: await listListeners(db, req.params.id!) } })),
    route("POST", "/subscriptions/:id/listeners/:listenerId/pull", {
      operationId: "pullListenerDeliveries", access: repeated, tag: TAG, summary: "Pull due deliveries (long poll)",
      description: `Waits up to \`waitSeconds\` (at most ${MAX_WAIT_SECONDS}: every ingress's request limit allows it) for due deliveries and leases them to the listener, as a relay leases them (for its \`leaseSeconds\`; renewed by heartbeats naming them). Each comes with the exact body and headers the relay would send, signed now: forward them unchanged so the receiver verifies the signature, then answer. An empty list when nothing came due.`,
      body: pullBody, bodyRequired: false,
      responses: { 200: { description: "The deliveries leased (possibly none).", schema: z.strictObject({ deliveries: z.array(listenedDeliverySchema) }) }, ...gone },
    }, async (req) => {
      const { subscriptionId, listenerId } = ids(req);
      const input = bodyOf(pullBody, await optionalJson(req), "pull request");
      const wait = (input.waitSeconds ?? DEFAULT_WAIT_SECONDS) * 1000;
      const limit = input.limit ?? 10;
      const deadline = Date.now() + wait;
      return mapped(async () => {
        for (;;) {
          const deliveries = await claimForListener(db, subscriptionId, listenerId, limit, policy);
          const left = deadline - Date.now();
          if (deliveries.length > 0 || left <= 0) return { status: 200, body: { deliveries } };
          await new Promise((r) => setTimeout(r, Math.min(LOOK_EVERY_MS, left)));
        }
      });
    }),
    route("POST", "/subscriptions/:id/listeners/:listenerId/answers", {
      operationId: "answerListenerDeliveries", access: repeated, tag: TAG, summary: "Record the local answers",
      description: "Each answer is the delivery's attempt, decided as the relay decides: 2xx delivered; 408, 425, 429, 5xx or no answer (`status: null` with `error`) retried with the subscription's backoff (Retry-After honoured), dead once exhausted; other statuses dead at once. Logged in the attempt log with the listener's id and the response headers; the endpoint's health is not touched. An answer for a delivery the listener no longer holds (its lease ran out) is logged as stale and changes nothing.",
      body: answersBody,
      responses: { 200: { description: "What each answer did.", schema: z.strictObject({ recorded: z.array(recordedSchema) }) } },
    }, async (req) => {
      const { subscriptionId, listenerId } = ids(req);
      const { answers } = bodyOf(answersBody, await req.json(), "answers");
      return { status: 200, body: { recorded: await recordListenerAnswers(db, subscriptionId, listenerId, answers, policy) } };
    }),
    route("POST", "/subscriptions/:id/listeners/:listenerId/heartbeat", {
      operationId: "listenerHeartbeat", access: repeated, tag: TAG, summary: "Keep a listener attached",
      description: "The listener stays attached another `leaseSeconds`, and the deliveries it names in `holding` keep their leases as long.",
      body: heartbeatBody, bodyRequired: false,
      responses: { 200: { description: "Still attached.", schema: listenerSchema }, ...gone },
    }, async (req) => {
      const { subscriptionId, listenerId } = ids(req);
      const { holding } = bodyOf(heartbeatBody, await optionalJson(req), "heartbeat");
      return mapped(async () => ({ status: 200, body: await renewListener(db, subscriptionId, listenerId, holding ?? []) }));
    }),
    route("DELETE", "/subscriptions/:id/listeners/:listenerId", {
      operationId: "detachListener", access: access("write"), tag: TAG, summary: "Detach a listener",
      description: "The deliveries it holds are released (due again at once, not after their lease), and the relays resume the subscription when no other listener is attached. Detaching a listener already gone answers `detached: false`.",
      responses: { 200: { description: "Detached.", schema: z.strictObject({ detached: z.boolean(), released: int }) } },
    }, async (req) => {
      const { subscriptionId, listenerId } = ids(req);
      return { status: 200, body: await detachListener(db, subscriptionId, listenerId) };
    }),
  ];
}
