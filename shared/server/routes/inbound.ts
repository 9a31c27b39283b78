/**
 * Inbound HTTP surface. `POST /webhooks/:partner` is public (the partner's signature is the
 * authentication) and hands the exact body bytes to the framework-free `ingest`. The inbox and
 * order views and the replays are admin routes.
 */
import type { PlatformContext } from "../../platform.js";
import { ingest, type IngestDeps } from "../../inbound/ingest.js";
import { createGroupCommit } from "../../inbound/groupCommit.js";
import { getInboxEntry, INBOX_STATUSES, listInboxEntries, type InboxStatus } from "../../inbound/inbox.js";
import { getOrder } from "../../inbound/orders.js";
import { REPLAYABLE_STATUSES, replayEntries, replayEntry, type ReplayableStatus } from "../../inbound/replay.js";
import { loadPartners } from "../../inbound/verify/index.js";
import { HttpError, type Request, type Route } from "../router.js";
import { decodeCursor, isStringPair, page } from "../pagination.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function entryId(req: Request): string {
  const id = req.params.id ?? "";
  if (!UUID.test(id)) throw new HttpError(400, "bad_id", `Inbox entry ids are UUIDs; got ${JSON.stringify(id.slice(0, 80))}.`);
  return id.toLowerCase();
}

function statusParam(value: string | null | undefined, allowed: readonly string[], name: string): string | undefined {
  if (value === null || value === undefined || value === "") return undefined;
  if (!allowed.includes(value)) throw new HttpError(400, "bad_query", `${name} must be one of ${allowed.join(", ")}; got ${JSON.stringify(value.slice(0, 40))}.`);
  return value;
}

function limitParam(value: unknown, name: string): number | undefined {
  if (value === null || value === undefined || value === "") return undefined;
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new HttpError(400, "bad_query", `${name} must be a whole number from 1 to 1000.`);
  return n;
}

interface BulkReplayBody {
  status?: unknown;
  partner?: unknown;
  ids?: unknown;
  limit?: unknown;
}

export function inboundRoutes(ctx: PlatformContext): Route[] {
  const { config, db } = ctx;
  // Validated at start: a bad PARTNERS stops the platform with a ConfigError naming the field.
  const partners = loadPartners({ PARTNERS: config.PARTNERS, PARTNERS_FILE: config.PARTNERS_FILE });
  // Concurrent ingests share one multi-row INSERT (group commit): one commit serves many events,
  // and each request is still answered only once its own event is durable. A second INSERT
  // starts beside a running one only once 16 events wait: fewer, larger commits cost PostgreSQL
  // less per event (docs/inbound.md, "Group commit").
  const inbox = createGroupCommit(db, { maxInFlight: 4, busyBatch: 16 });
  const deps: IngestDeps = { db, partners, maxBodyBytes: config.MAX_INBOUND_BODY_BYTES, logger: ctx.logger, store: inbox.store };

  return [
    {
      method: "POST",
      path: "/webhooks/:partner",
      auth: "none",
      handler: async (req) => {
        const name = req.params.partner ?? "";
        // An unknown partner gets its 404 without us reading (or limiting) a body for nobody.
        const raw = partners.has(name) ? await req.body() : Buffer.alloc(0);
        const r = await ingest(deps, name, req.headers, raw);
        return { status: r.status, headers: r.headers, body: r.body };
      },
    },
    {
      method: "GET",
      path: "/inbox",
      auth: "admin",
      handler: async (req) => {
        const beforeText = req.query.get("before");
        const before = beforeText ? new Date(beforeText) : undefined;
        if (before && Number.isNaN(before.getTime())) throw new HttpError(400, "bad_query", "before must be an ISO 8601 time, e.g. the receivedAt of the last entry of the previous page.");
        const after = decodeCursor(req.query.get("cursor") ?? undefined, isStringPair);
        if (after && !UUID.test(after[1])) throw new HttpError(400, "invalid_cursor", "cursor is not one this list gave out; pass the `next` of the previous page unchanged.");
        const { rows, next } = await page(limitParam(req.query.get("limit"), "limit"), (n) => listInboxEntries(db, {
          status: statusParam(req.query.get("status"), INBOX_STATUSES, "status") as InboxStatus | undefined,
          partner: req.query.get("partner") || undefined,
          limit: n,
          before,
          after,
        }), (e) => e.key);
        return { status: 200, body: { entries: rows.map(({ key: _key, ...e }) => e), next } };
      },
    },
    {
      method: "GET",
      path: "/inbox/:id",
      auth: "admin",
      handler: async (req) => {
        const entry = await getInboxEntry(db, entryId(req));
        if (!entry) throw new HttpError(404, "not_found", `No inbox entry ${req.params.id}.`);
        return { status: 200, body: entry };
      },
    },
    {
      method: "POST",
      path: "/inbox/:id/replay",
      auth: "admin",
      handler: async (req) => {
        const r = await replayEntry(db, entryId(req), { by: "admin-api" });
        if (r.kind === "not_found") throw new HttpError(404, "not_found", `No inbox entry ${req.params.id}.`);
        if (r.kind === "already_pending") throw new HttpError(409, "already_pending", "The entry is already pending: the processor will take it; nothing to replay.");
        return { status: 202, body: { replayed: [r.id], previousStatus: r.previousStatus } };
      },
    },
    {
      method: "POST",
      path: "/inbox/replay",
      auth: "admin",
      handler: async (req) => {
        const raw = await req.body();
        const body: BulkReplayBody = raw.length === 0 ? {} : await req.json<BulkReplayBody>();
        if (typeof body !== "object" || body === null || Array.isArray(body)) throw new HttpError(400, "bad_body", "Send a JSON object: { status?, partner?, ids?, limit? }.");
        const unknown = Object.keys(body).filter((k) => !["status", "partner", "ids", "limit"].includes(k));
        if (unknown.length) throw new HttpError(400, "bad_body", `Unknown field ${unknown.map((k) => JSON.stringify(k)).join(", ")}; use status, partner, ids, limit.`);
        if (body.status !== undefined && typeof body.status !== "string") throw new HttpError(400, "bad_body", "status must be a string.");
        const status = statusParam(body.status as string | undefined, REPLAYABLE_STATUSES, "status") as ReplayableStatus | undefined;
        if (body.partner !== undefined && typeof body.partner !== "string") throw new HttpError(400, "bad_body", "partner must be a string.");
        if (body.ids !== undefined && !(Array.isArray(body.ids) && body.ids.length <= 1000 && body.ids.every((x) => typeof x === "string" && UUID.test(x)))) {
          throw new HttpError(400, "bad_body", "ids must be an array of at most 1000 inbox entry ids (UUIDs).");
        }
        const r = await replayEntries(
          db,
          { status, partner: body.partner as string | undefined, ids: body.ids as string[] | undefined, limit: limitParam(body.limit, "limit") },
          { by: "admin-api" },
        );
        return { status: 202, body: { replayed: r.ids } };
      },
    },
    {
      method: "GET",
      path: "/orders/:id",
      auth: "admin",
      handler: async (req) => {
        const order = await getOrder(db, req.params.id ?? "");
        if (!order) throw new HttpError(404, "not_found", `No order ${JSON.stringify((req.params.id ?? "").slice(0, 128))}.`);
        return { status: 200, body: order };
      },
    },
  ];
}
