/**
 * Every call the admin page makes to the management API, typed by the generated client
 * (shared/client/): a path, a parameter or a body field the API's document lacks fails `tsc`
 * here. The page's own script (app.js) is plain browser JavaScript; it imports these functions
 * from client.js, this module bundled with openapi-fetch by esbuild (./buildClient.ts). client.js
 * is committed, served like the page's other files, and rebuilt by `npm run generate:client`;
 * test/operator/client.test.ts fails while it differs from a fresh build.
 *
 * The functions are named after the operations' operationIds in /openapi.json. What app.js passes
 * them (a page's `limit` and `cursor`, the application chosen) is checked by the browser tests,
 * not by tsc.
 */
import { apiErrorOf, createWebhooksClient, type BodyOf, type QueryOf } from "../client/index.js";

/** The token was refused (401): the page asks for it again. */
export class Unauthorized extends Error {
  override name = "Unauthorized";
}

/** The page's API: `base` is where the API is (`""`, or `/api` behind a prefix), `token` asked before each call. */
export function connect(base: string, token: () => string | undefined) {
  const client = createWebhooksClient({ url: base, token, headers: { accept: "application/json" } });

  /** The 2xx data, or an error whose message is the API's own (`error.message`). */
  async function ok<D>(pending: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
    const { data, error, response } = await pending;
    if (response.status === 401) throw new Unauthorized("The token was refused.");
    if (!response.ok) throw new Error(apiErrorOf(error)?.message ?? `${new URL(response.url).pathname} failed with ${response.status}`);
    return data as D;
  }
  const id = (value: string) => ({ params: { path: { id: value } } });

  return {
    health: () => ok(client.GET("/healthz")),
    whoAmI: () => ok(client.GET("/me")),
    listApplications: (query: QueryOf<"/applications">) => ok(client.GET("/applications", { params: { query } })),
    getApplication: (applicationId: string) => ok(client.GET("/applications/{id}", id(applicationId))),
    deliveriesPerMinute: (query: QueryOf<"/stats/deliveries-per-minute">) => ok(client.GET("/stats/deliveries-per-minute", { params: { query } })),

    listDeadLetters: (query: QueryOf<"/dead-letters">) => ok(client.GET("/dead-letters", { params: { query } })),
    countDeadLetters: (query: QueryOf<"/dead-letters/count">) => ok(client.GET("/dead-letters/count", { params: { query } })),
    replayDeadLetter: (deliveryId: string) => ok(client.POST("/dead-letters/{id}/replay", id(deliveryId))),
    replayDeadLetters: (body: BodyOf<"/dead-letters/replay", "post">) => ok(client.POST("/dead-letters/replay", { body })),

    listInbox: (query: QueryOf<"/inbox">) => ok(client.GET("/inbox", { params: { query } })),
    countInbox: (query: QueryOf<"/inbox/count">) => ok(client.GET("/inbox/count", { params: { query } })),
    replayInboxEntry: (entryId: string) => ok(client.POST("/inbox/{id}/replay", id(entryId))),
    replayInbox: (body: BodyOf<"/inbox/replay", "post">) => ok(client.POST("/inbox/replay", { body })),

    listDeliveries: (query: QueryOf<"/deliveries">) => ok(client.GET("/deliveries", { params: { query } })),
    listAttempts: (deliveryId: string, query: QueryOf<"/deliveries/{id}/attempts"> = {}) =>
      ok(client.GET("/deliveries/{id}/attempts", { params: { path: { id: deliveryId }, query } })),

    listSubscriptions: (query: QueryOf<"/subscriptions">) => ok(client.GET("/subscriptions", { params: { query } })),
    enableSubscription: (subscriptionId: string) => ok(client.POST("/subscriptions/{id}/enable", id(subscriptionId))),
    pauseSubscription: (subscriptionId: string) => ok(client.POST("/subscriptions/{id}/pause", id(subscriptionId))),
    resumeSubscription: (subscriptionId: string) => ok(client.POST("/subscriptions/{id}/resume", id(subscriptionId))),
    sendTestEvent: (subscriptionId: string) => ok(client.POST("/subscriptions/{id}/test", { ...id(subscriptionId), body: {} })),
    deleteSubscription: (subscriptionId: string) => ok(client.DELETE("/subscriptions/{id}", id(subscriptionId))),
    listOrderingKeys: (subscriptionId: string, query: QueryOf<"/subscriptions/{id}/ordering-keys">) =>
      ok(client.GET("/subscriptions/{id}/ordering-keys", { params: { path: { id: subscriptionId }, query } })),
    skipOrderingKey: (subscriptionId: string, key: string, body: BodyOf<"/subscriptions/{id}/ordering-keys/{key}/skip", "post">) =>
      ok(client.POST("/subscriptions/{id}/ordering-keys/{key}/skip", { params: { path: { id: subscriptionId, key } }, body })),

    listForwarding: () => ok(client.GET("/inbound/forwarding")),
    listEvents: (query: QueryOf<"/events">) => ok(client.GET("/events", { params: { query } })),
    getEvent: (eventId: string) => ok(client.GET("/events/{id}", id(eventId))),
    listEventTypes: (query: QueryOf<"/event-types">) => ok(client.GET("/event-types", { params: { query } })),
  };
}
