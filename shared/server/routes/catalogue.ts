/**
 * The event catalogue's routes (issue 30 item 1, docs/catalogue.md): the event types of an
 * application, their import from an OpenAPI document, and whether the catalogue is strict.
 * Every route acts on one application: an application key's own, else `applicationId` (query or
 * body), else the default application.
 */
import * as z from "zod/mini";
import type { PlatformContext } from "../../context.js";
import {
  createEventType, deleteEventType, eventTypeChangeSchema, eventTypeInputSchema, getCatalogueSettings, getEventType, listEventTypes,
  setCatalogueSettings, catalogueSettingsSchema, updateEventType,
} from "../../outbound/catalogue.js";
import { importEventTypes, importInputSchema } from "../../outbound/catalogueImport.js";
import { decodeCursor, isString, page } from "../pagination.js";
import type { Route } from "../router.js";
import { pageOf } from "../schemas.js";
import { bodyOf, cursor, filterText, limit, route } from "./validate.js";
import { inApplication, targetApplication } from "../../tenancy/access.js";
import { checkTransformation, runTransformation, TransformationError } from "../../outbound/transformations.js";
import { HttpError } from "../router.js";

const transformationTestSchema = z.strictObject({
  transformation: z.string().check(z.minLength(1), z.maxLength(64 * 1024)),
  /** The event to run it on; default: the first example of `eventType` in the catalogue. */
  event: z.optional(z.strictObject({ id: z.optional(z.string()), type: z.string(), timestamp: z.optional(z.string()), data: z.unknown() })),
  eventType: z.optional(z.string()),
  applicationId: filterText(),
});

const TAG = "Event catalogue";
const time = z.iso.datetime({ offset: true });
export const eventTypeSchema = z.strictObject({
  applicationId: z.string(),
  name: z.string(),
  description: z.nullable(z.string()),
  schema: z.nullable(z.record(z.string(), z.unknown())),
  examples: z.array(z.unknown()),
  version: z.number().check(z.int()),
  deprecated: z.boolean(),
  validation: z.enum(["off", "warn", "enforce"]),
  createdAt: time,
  updatedAt: time,
});
const settingsSchema = z.strictObject({ applicationId: z.string(), strict: z.boolean() });
const inApp = z.strictObject({ applicationId: filterText() });
const one = { 200: { description: "The event type.", schema: eventTypeSchema } };

export function catalogueRoutes(ctx: PlatformContext): Route[] {
  const { db } = ctx;
  const name = (req: { params: Record<string, string> }) => req.params.name!;
  return [
    route("GET", "/event-types", {
      operationId: "listEventTypes", access: { action: "read", audience: "application" }, tag: TAG, summary: "List the event catalogue",
      description: "The application's event types by name, each with its JSON Schema, examples, version and whether it is deprecated. `includeDeprecated=false` leaves deprecated ones out (what a customer should subscribe to).",
      query: z.strictObject({ applicationId: filterText(), includeDeprecated: z.optional(z.pipe(z.enum(["true", "false"]), z.transform((v: "true" | "false") => v === "true"))), limit, cursor }),
      responses: { 200: { description: "A page of event types.", schema: pageOf("eventTypes", eventTypeSchema) } },
    }, async (req, q) => {
      const after = decodeCursor(q.cursor, isString);
      const applicationId = targetApplication(req, q.applicationId);
      const { rows, next } = await page(q.limit, (n) => listEventTypes(db, { applicationId, after, limit: n, includeDeprecated: q.includeDeprecated ?? true }), (t) => t.name);
      return { status: 200, body: { eventTypes: rows, next } };
    }),
    route("POST", "/event-types", {
      operationId: "createEventType", access: { action: "write", audience: "application" }, tag: TAG, summary: "Add an event type",
      description: "`schema` is a JSON Schema (2020-12) of the events' `data`; it must compile, and each of `examples` must satisfy it. `validation` says what enqueue does with data it refuses: `off` (default), `warn` (accepted, the errors kept on the event and in the answer), `enforce` (refused with the errors, 422, nothing written).",
      body: eventTypeInputSchema,
      responses: { 201: { description: "Added (version 1).", schema: eventTypeSchema }, 409: { description: "The application's catalogue has this name already." } },
    }, async (req) => ({ status: 201, body: await createEventType(db, inApplication(req, await req.json())) })),
    route("POST", "/event-types/import", {
      operationId: "importEventTypes", access: { action: "write", audience: "application" }, tag: TAG, summary: "Import event types from an OpenAPI document",
      description: "Each entry of the document's `webhooks` (OpenAPI 3.1) becomes an event type named by its key: description from its summary or description, schema from its request body (`data` of it when the body is an envelope with `type` and `data`), `$ref`s to `components.schemas` resolved, examples from the media type. Existing types are updated (a changed schema is a new version) unless `overwrite` is false.",
      body: importInputSchema,
      responses: { 200: { description: "What was created, updated and left alone.", schema: z.strictObject({ created: z.array(z.string()), updated: z.array(z.string()), unchanged: z.array(z.string()), skipped: z.array(z.strictObject({ key: z.string(), reason: z.string() })) }) } },
    }, async (req) => {
      const body = inApplication(req, await req.json()) as { applicationId?: string };
      return { status: 200, body: await db.transaction((tx) => importEventTypes(tx, body)) };
    }),
    route("GET", "/event-types/:name", { operationId: "getEventType", access: { action: "read", audience: "application" }, tag: TAG, summary: "Get an event type", query: inApp, responses: one },
      async (req, q) => ({ status: 200, body: await getEventType(db, name(req), targetApplication(req, q.applicationId)) })),
    route("PATCH", "/event-types/:name", {
      operationId: "updateEventType", access: { action: "write", audience: "application" }, tag: TAG, summary: "Edit an event type",
      description: "Changes the fields given. A new `schema` is a new version (validators are compiled once per version); events enqueued after the change are validated by it.",
      query: inApp, body: eventTypeChangeSchema, responses: one,
    }, async (req, q) => ({ status: 200, body: await updateEventType(db, name(req), await req.json(), targetApplication(req, q.applicationId)) })),
    route("DELETE", "/event-types/:name", {
      operationId: "deleteEventType", access: { action: "write", audience: "application" }, tag: TAG, summary: "Remove an event type",
      description: "Events of that type are still accepted, no longer validated. Prefer `deprecated: true` while subscribers still use it.",
      query: inApp, responses: { 200: { description: "Removed.", schema: z.strictObject({ name: z.string(), deleted: z.literal(true) }) } },
    }, async (req, q) => ({ status: 200, body: await deleteEventType(db, name(req), targetApplication(req, q.applicationId)) })),
    route("POST", "/transformations/test", {
      operationId: "testTransformation", access: { action: "read", audience: "application" }, tag: TAG, summary: "Test a transformation on an example",
      description: "Runs `transformation` in the sandbox (same limits as the relay) on `event`, or on the first example of `eventType` in the catalogue, and answers what would be sent (`result`: `{ body, headers?, url? }`, or `null`: skipped) or why it fails (`error`). Nothing is written or sent.",
      body: transformationTestSchema,
      responses: { 200: { description: "What it made of the event, or its error.", schema: z.strictObject({ event: z.unknown(), result: z.nullable(z.unknown()), error: z.nullable(z.string()) }) } },
    }, async (req) => {
      const input = bodyOf(transformationTestSchema, await req.json(), "transformation test");
      let event: unknown = input.event ? { id: "evt_test", timestamp: new Date().toISOString(), ...input.event } : undefined;
      if (!event) {
        if (!input.eventType) throw new HttpError(400, "invalid_request", "Invalid transformation test: give an event ({ type, data }) or an eventType whose catalogue entry has an example.");
        const t = await getEventType(db, input.eventType, targetApplication(req, input.applicationId));
        if (t.examples.length === 0) throw new HttpError(400, "invalid_request", `Invalid transformation test: the event type ${t.name} has no example; give an event.`);
        event = { id: "evt_test", type: t.name, timestamp: new Date().toISOString(), data: t.examples[0] };
      }
      await checkTransformation(input.transformation);
      try {
        const result = await runTransformation(input.transformation, event);
        return { status: 200, body: { event, result: result.skip ? null : { body: result.body, ...(result.headers ? { headers: result.headers } : {}), ...(result.url ? { url: result.url } : {}) }, error: null } };
      } catch (error) {
        if (!(error instanceof TransformationError)) throw error;
        return { status: 200, body: { event, result: null, error: error.message } };
      }
    }),
    route("GET", "/catalogue-settings", {
      operationId: "getCatalogueSettings", access: { action: "read", audience: "application" }, tag: TAG, summary: "Whether the catalogue is strict",
      query: inApp, responses: { 200: { description: "The settings.", schema: settingsSchema } },
    }, async (req, q) => ({ status: 200, body: await getCatalogueSettings(db, targetApplication(req, q.applicationId)) })),
    route("PUT", "/catalogue-settings", {
      operationId: "setCatalogueSettings", access: { action: "write", audience: "application" }, tag: TAG, summary: "Make the catalogue strict, or not",
      description: "`strict: true`: a subscription (created or edited) whose event type or pattern matches no catalogue entry is refused (400); otherwise it is accepted with `warnings`.",
      query: inApp, body: catalogueSettingsSchema, responses: { 200: { description: "The settings.", schema: settingsSchema } },
    }, async (req, q) => ({ status: 200, body: await setCatalogueSettings(db, await req.json(), targetApplication(req, q.applicationId)) })),
  ];
}
