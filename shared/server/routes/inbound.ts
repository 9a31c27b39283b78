/**
 * Inbound HTTP surface. `POST /webhooks/:partner` is public (the partner's signature is the
 * authentication) and hands the exact body bytes to the framework-free `ingest`; in the cloud the
 * ingest function serves it instead (`webhookRoute` apart). The inbox and entity views and the
 * replays are admin routes, part of the management API everywhere (`inboxRoutes`).
 */
import type { PlatformContext } from "../../context.js";
import { ingest, type IngestDeps } from "../../inbound/ingest.js";
import { createGroupCommit } from "../../inbound/groupCommit.js";
import { countInboxEntries, getInboxEntry, INBOX_STATUSES, listInboxEntries, type InboxStatus } from "../../inbound/inbox.js";
import { getEntity } from "../../inbound/entities.js";
import { REPLAYABLE_STATUSES, replayEntries, replayEntry, type ReplayableStatus } from "../../inbound/replay.js";
import { loadPartners } from "../../inbound/verify/index.js";
import * as z from "zod/mini";
import { HttpError, type Request, type Route } from "../router.js";
import type { OperationDoc } from "../operation.js";
import { decodeCursor, isStringPair, page } from "../pagination.js";
import { countSchema, errorSchema, inboxDetailSchema, inboxReplaySchema, inboxSummarySchema, ingestResultSchema, entitySchema, pageOf } from "../schemas.js";
import { cursor, filterText, limit, optionalJson, bodyOf, route, time } from "./validate.js";
import { actorFor } from "../../tenancy/access.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function entryId(req: Request): string {
  const id = req.params.id ?? "";
  if (!UUID.test(id)) throw new HttpError(400, "bad_id", `Inbox entry ids are UUIDs; got ${JSON.stringify(id.slice(0, 80))}.`);
  return id.toLowerCase();
}

const inboxCountQuery = z.strictObject({ status: z.optional(z.enum(INBOX_STATUSES)), partner: filterText() });
const inboxQuery = z.strictObject({
  status: z.optional(z.enum(INBOX_STATUSES)),
  partner: filterText(),
  /** Received before this time. */
  before: time(),
  limit,
  cursor,
});
const bulkReplay = z.strictObject({
  status: z.optional(z.enum(REPLAYABLE_STATUSES)),
  partner: filterText(),
  ids: z.optional(z.array(z.string().check(z.regex(UUID, "must be an inbox entry id (a UUID)"))).check(z.maxLength(1000))),
  limit: z.optional(z.number().check(z.int(), z.gte(1), z.lte(1000))),
});

const TAG = "Inbox";

/** How `POST /webhooks/:partner` is documented, wherever it is served (locally here; in the cloud by the ingest function). */
export const RECEIVE_WEBHOOK_DOC: OperationDoc = {
  operationId: "receiveWebhook", tag: "Inbound webhooks", summary: "Receive a partner's signed webhook",
  description: "The partner's signature is the authentication (no token). The exact bytes are verified, stored under (partner, partner event id) before the answer, and processed in the background.",
  body: z.string(), bodyMediaType: "*/*",
  responses: {
    202: { description: "Stored.", schema: ingestResultSchema },
    200: { description: "A duplicate: stored before (`payloadMismatch` when the bytes differ).", schema: ingestResultSchema },
    400: { description: "Malformed (no event id, unreadable headers).", schema: errorSchema },
    401: { description: "The signature does not verify.", schema: errorSchema },
    404: { description: "No such partner.", schema: errorSchema },
    413: { description: "Larger than MAX_INBOUND_BODY_BYTES.", schema: errorSchema },
  },
};

/** The inbound webhook route and the inbox routes, as the local server serves them. */
export function inboundRoutes(ctx: PlatformContext): Route[] {
  return [webhookRoute(ctx), ...inboxRoutes(ctx)];
}

/** `POST /webhooks/:partner`: served by the local server; in the cloud, the ingest function serves it. */
export function webhookRoute(ctx: PlatformContext): Route {
  const { config, db } = ctx;
  // Validated at start: a bad PARTNERS stops the platform with a ConfigError naming the field.
  const partners = loadPartners({ PARTNERS: config.PARTNERS, PARTNERS_FILE: config.PARTNERS_FILE });
  // Concurrent ingests share one multi-row INSERT (group commit): one commit serves many events,
  // and each request is still answered only once its own event is durable. A second INSERT
  // starts beside a running one only once 16 events wait: fewer, larger commits cost PostgreSQL
  // less per event (docs/inbound.md, "Group commit").
  const inbox = createGroupCommit(db, { maxInFlight: 4, busyBatch: 16 });
  const deps: IngestDeps = { db, partners, maxBodyBytes: config.MAX_INBOUND_BODY_BYTES, logger: ctx.logger, store: inbox.store };
  return {
    method: "POST",
    path: "/webhooks/:partner",
    auth: "none",
    doc: RECEIVE_WEBHOOK_DOC,
    handler: async (req) => {
      const name = req.params.partner ?? "";
      // An unknown partner gets its 404 without us reading (or limiting) a body for nobody.
      const raw = partners.has(name) ? await req.body() : Buffer.alloc(0);
      const r = await ingest(deps, name, req.headers, raw);
      return { status: r.status, headers: r.headers, body: r.body };
    },
  };
}

/** The inbox and entity views and the inbox replays (admin routes): served wherever the management API is. */
export function inboxRoutes(ctx: PlatformContext): Route[] {
  const { db } = ctx;
  return [
    route("GET", "/inbox", {
      operationId: "listInbox", access: { action: "read", audience: "operator" }, tag: TAG, summary: "List inbox entries", description: "Newest first.", query: inboxQuery,
      responses: { 200: { description: "A page of inbox entries.", schema: pageOf("entries", inboxSummarySchema) } },
    }, async (_req, { cursor: c, limit: size, ...filter }) => {
      const after = decodeCursor(c, isStringPair);
      if (after && !UUID.test(after[1])) throw new HttpError(400, "invalid_cursor", "cursor is not one this list gave out; pass the `next` of the previous page unchanged.");
      const { rows, next } = await page(size, (n) => listInboxEntries(db, { ...filter, status: filter.status as InboxStatus | undefined, limit: n, after }), (e) => e.key);
      return { status: 200, body: { entries: rows.map(({ key: _key, ...e }) => e), next } };
    }),
    // Before `/inbox/:id`, so `count` is never read as an id.
    route("GET", "/inbox/count", {
      operationId: "countInbox", access: { action: "read", audience: "operator" }, tag: TAG, summary: "Count inbox entries",
      description: "How many entries have `status` (and come from `partner`): the admin page's count, beyond the page it lists.",
      query: inboxCountQuery,
      responses: { 200: { description: "The count.", schema: countSchema } },
    }, async (_req, filter) => ({ status: 200, body: { count: await countInboxEntries(db, { ...filter, status: filter.status as InboxStatus | undefined }) } })),
    route("GET", "/inbox/:id", {
      operationId: "getInboxEntry", access: { action: "read", audience: "operator" }, tag: TAG, summary: "Get an inbox entry with its payload, conflicts and replays",
      responses: { 200: { description: "The entry.", schema: inboxDetailSchema } },
    }, async (req) => {
      const entry = await getInboxEntry(db, entryId(req));
      if (!entry) throw new HttpError(404, "not_found", `No inbox entry ${req.params.id}.`);
      return { status: 200, body: entry };
    }),
    route("POST", "/inbox/:id/replay", {
      operationId: "replayInboxEntry", access: { action: "write", audience: "operator" }, tag: TAG, summary: "Replay one inbox entry",
      responses: {
        202: { description: "Pending again; the processor takes it.", schema: inboxReplaySchema },
        409: { description: "Already pending." },
      },
    }, async (req) => {
      const r = await replayEntry(db, entryId(req), { by: actorFor(req) });
      if (r.kind === "not_found") throw new HttpError(404, "not_found", `No inbox entry ${req.params.id}.`);
      if (r.kind === "already_pending") throw new HttpError(409, "already_pending", "The entry is already pending: the processor will take it; nothing to replay.");
      return { status: 202, body: { replayed: [r.id], previousStatus: r.previousStatus } };
    }),
    route("POST", "/inbox/replay", {
      operationId: "replayInbox", access: { action: "write", audience: "operator" }, tag: TAG, summary: "Replay inbox entries by status, partner or ids",
      description: "Default status: quarantined; at most `limit` (1–1000, default 100).",
      body: bulkReplay, bodyRequired: false,
      responses: { 202: { description: "The entries replayed.", schema: inboxReplaySchema } },
    }, async (req) => {
      const body = bodyOf(bulkReplay, await optionalJson(req), "replay request");
      const r = await replayEntries(db, { ...body, status: body.status as ReplayableStatus | undefined }, { by: actorFor(req) });
      return { status: 202, body: { replayed: r.ids } };
    }),
    route("GET", "/entities/:machine/:id", {
      operationId: "getEntity", access: { action: "read", audience: "operator" }, tag: TAG, summary: "Get an entity of a state machine and its transitions",
      description: "The reconciler's state of one entity (e.g. machine `order`, id `o-1`) and every decision taken for it, oldest first.",
      responses: { 200: { description: "The entity.", schema: entitySchema } },
    }, async (req) => {
      const entity = await getEntity(db, req.params.machine!, req.params.id!);
      if (!entity) throw new HttpError(404, "not_found", `No ${JSON.stringify(req.params.machine!.slice(0, 64))} entity ${JSON.stringify(req.params.id!.slice(0, 128))}.`);
      return { status: 200, body: entity };
    }),
  ];
}
