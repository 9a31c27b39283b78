/**
 * What every management route shares: the query and body checked with zod (unknown parameters
 * refused, so typos do not pass silently), and the core's typed errors as precise 4xx answers.
 */
import * as z from "zod/mini";
import { safeParse } from "../../safeParse.js";
import { EventConflictError, KeyNotBlockedError, NotADeadLetterError, NotFoundError, NotSubscribedError, OutboundValidationError, PayloadTooLargeError } from "../../outbound/index.js";
import { formatPath } from "../../outbound/validation.js";
import { EventTypeExistsError, SchemaValidationError } from "../../outbound/catalogue.js";
import { isUnreadableSecretError } from "../../crypto/subscriptionSecrets.js";
import { MAX_PAGE_SIZE } from "../pagination.js";
import type { OperationDoc } from "../operation.js";
import { HttpError, type Request, type Response, type Route } from "../router.js";

/** Our typed errors as HTTP answers; anything else goes to the router (503 for a database outage, else 500). */
export function toHttpError(error: unknown): unknown {
  if (error instanceof SchemaValidationError) return new HttpError(422, "schema_validation_failed", error.message, error.issues);
  if (error instanceof EventTypeExistsError) return new HttpError(409, "event_type_exists", error.message, { applicationId: error.applicationId, name: error.eventType });
  if (error instanceof PayloadTooLargeError) return new HttpError(413, "payload_too_large", error.message, { sizeBytes: error.sizeBytes, limitBytes: error.limitBytes });
  if (error instanceof OutboundValidationError) return new HttpError(400, "invalid_request", error.message, error.issues);
  if (error instanceof EventConflictError) return new HttpError(409, "event_conflict", error.message, { eventId: error.eventId });
  if (error instanceof NotFoundError) return new HttpError(404, "not_found", error.message, { entity: error.entity, id: error.id });
  if (error instanceof NotADeadLetterError) return new HttpError(409, "not_a_dead_letter", error.message, { id: error.deliveryId, status: error.status });
  if (error instanceof KeyNotBlockedError) return new HttpError(409, "key_not_blocked", error.message, { orderingKey: error.orderingKey, headStatus: error.headStatus });
  if (error instanceof NotSubscribedError) return new HttpError(409, "not_subscribed", error.message, { eventId: error.eventId, subscriptionId: error.subscriptionId });
  // A stored secret that does not decrypt here (a key id missing from ENCRYPTION_KEYS, no keys at
  // all): the server's configuration, not the request; the message names the key id, never key bytes.
  if (isUnreadableSecretError(error)) return new HttpError(500, "secret_unreadable", error.message);
  // SQLSTATE class 22 (data exception): a value PostgreSQL cannot take, such as a NUL character.
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code.startsWith("22")) {
    return new HttpError(400, "invalid_request", "A value in the request cannot be stored (for example a NUL character); remove it and retry.");
  }
  return error;
}

/**
 * A documented admin route whose typed errors become 4xx answers. Its query is parsed with
 * `doc.query`, the schema the OpenAPI document shows, and handed to the handler.
 */
export function route<Q extends z.core.$ZodType | undefined = undefined>(
  method: Route["method"],
  path: string,
  doc: OperationDoc & { query?: Q },
  handler: (req: Request, query: Q extends z.core.$ZodType ? z.infer<Q> : undefined) => Promise<Response>,
): Route {
  return {
    method,
    path,
    auth: "admin",
    doc,
    handler: async (req) => {
      try {
        const query = doc.query ? queryOf(req, doc.query) : noQuery(req);
        return await handler(req, query as Q extends z.core.$ZodType ? z.infer<Q> : undefined);
      } catch (error) {
        throw toHttpError(error);
      }
    },
  };
}

/** A route that takes no query refuses one, as the others refuse unknown parameters. */
function noQuery(req: Request): undefined {
  const first = [...req.query.keys()][0];
  if (first !== undefined) throw new HttpError(400, "invalid_request", `Invalid query: ${first}: this operation takes no query parameters.`);
  return undefined;
}

function invalid(what: string, issues: readonly z.core.$ZodIssue[]): HttpError {
  const list = issues.map((i) => ({ path: formatPath(i.path), message: i.message }));
  return new HttpError(400, "invalid_request", `Invalid ${what}: ${list.map((i) => `${i.path}: ${i.message}`).join("; ")}.`, list);
}

/** Parses the query string with `schema`; a parameter given twice or unknown is a 400. */
export function queryOf<S extends z.core.$ZodType>(req: Request, schema: S): z.infer<S> {
  const raw: Record<string, string> = {};
  for (const [key, value] of req.query) {
    if (key in raw) throw new HttpError(400, "invalid_request", `Query parameter ${key} is given twice; give it once.`);
    raw[key] = value;
  }
  const parsed = safeParse(schema, raw);
  if (!parsed.success) throw invalid("query", parsed.error.issues);
  return parsed.data;
}

export function bodyOf<S extends z.core.$ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const parsed = safeParse(schema, input);
  if (!parsed.success) throw invalid(what, parsed.error.issues);
  return parsed.data;
}

/** The JSON body, or `{}` when there is none (routes whose every field is optional). */
export async function optionalJson(req: Request): Promise<unknown> {
  const raw = await req.body();
  return raw.length === 0 ? {} : req.json();
}

export const limit = z.optional(z.coerce.number().check(z.int(), z.gte(1), z.lte(MAX_PAGE_SIZE)));
export const cursor = z.optional(z.string().check(z.minLength(1), z.maxLength(1000)));
/** An optional text filter of 1 to 200 characters. */
export const filterText = () => z.optional(z.string().check(z.minLength(1), z.maxLength(200)));
/** An optional ISO 8601 time with an offset (`2026-01-31T12:00:00Z`), as a Date. */
export const time = () => z.optional(z.pipe(z.iso.datetime({ offset: true }), z.transform((s: string) => new Date(s))));
