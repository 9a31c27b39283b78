/**
 * The event catalogue (issue 30 item 1, docs/catalogue.md): the event types an application
 * publishes, each with a description, a JSON Schema (2020-12) of its `data`, examples, a version
 * and a deprecated flag; what enqueue does with data its schema refuses (`validation`: off, warn,
 * enforce); and whether subscriptions must name types the catalogue has (`strict`).
 *
 * Validators are compiled by ajv once per schema (keyed by the schema's text, so a version is
 * compiled once however many databases or reloads see it). Enqueue keeps the validating types of
 * the catalogue revision it last read (`catalogueFor`); its statement writes nothing when the
 * revision moved, and it reloads and validates again.
 */
import { createHash } from "node:crypto";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import * as z from "zod/mini";
import type { Queryable } from "../db/port.js";
import { NotFoundError, OutboundValidationError, type Issue } from "./errors.js";
import { eventTypeProblem, matchesEventType } from "./eventTypes.js";
import { parseOrThrow } from "./validation.js";
import { DEFAULT_APPLICATION_ID } from "../tenancy/defaults.js";

export type ValidationMode = "off" | "warn" | "enforce";

export interface EventType {
  applicationId: string;
  name: string;
  description: string | null;
  /** JSON Schema (2020-12) of the events' `data`; null: any data. */
  schema: Record<string, unknown> | null;
  examples: unknown[];
  /** 1 at creation; +1 at every change of `schema`. */
  version: number;
  deprecated: boolean;
  validation: ValidationMode;
  createdAt: Date;
  updatedAt: Date;
}

const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
/** Compiled validators by the SHA-256 of their schema's text: compiled once per schema version. */
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 1000;

/** The validator of `schema` (compiled on first use); throws OutboundValidationError for a schema ajv refuses. */
export function validatorFor(schema: Record<string, unknown>, where = "schema"): ValidateFunction {
  // Canonical (keys sorted): jsonb gives a stored schema back with its keys in its own order.
  const text = canonicalJson(schema);
  const key = createHash("sha256").update(text).digest("base64url");
  let fn = compiled.get(key);
  if (!fn) {
    try {
      // A copy without $id: two event types may share a schema that names itself.
      const { $id: _id, ...rest } = JSON.parse(text) as Record<string, unknown>;
      fn = ajv.compile(rest);
    } catch (error) {
      throw new OutboundValidationError(`Invalid event type: ${where}: not a valid JSON Schema 2020-12: ${(error as Error).message}.`, [{ path: where, message: (error as Error).message }]);
    }
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, fn);
  }
  return fn;
}

/** JSON text with every object's keys sorted, so equal values have equal texts. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "object" && v !== null && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : v));
}

/** How many schemas have been compiled in this process (tests check a version is compiled once). */
export const compiledValidatorCount = (): number => compiled.size;

/** ajv's errors as our issues: the path inside `data`, and what is wrong. */
export function schemaIssues(errors: readonly ErrorObject[] | null | undefined): Issue[] {
  return (errors ?? []).map((e) => ({
    path: `data${e.instancePath.replace(/\/([^/]*)/g, (_, seg: string) => (/^\d+$/.test(seg) ? `[${seg}]` : `.${seg.replace(/~1/g, "/").replace(/~0/g, "~")}`))}`,
    message: `${e.message ?? "is invalid"}${e.keyword === "additionalProperties" ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})` : ""}${e.keyword === "enum" ? ` (${JSON.stringify((e.params as { allowedValues?: unknown }).allowedValues)})` : ""}`,
  }));
}

const jsonObject = z.record(z.string(), z.unknown());
const fields = {
  description: z.optional(z.nullable(z.string().check(z.maxLength(2000)))),
  schema: z.optional(z.nullable(jsonObject.check(z.describe("JSON Schema (2020-12) of the events' `data`.")))),
  examples: z.optional(z.array(z.unknown()).check(z.maxLength(20, "at most 20 examples"))),
  deprecated: z.optional(z.boolean()),
  validation: z.optional(z.enum(["off", "warn", "enforce"])),
};
const nameSchema = z.string().check(z.superRefine((t, ctx) => {
  const problem = eventTypeProblem(t);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
}));

/** What `createEventType` accepts. */
export const eventTypeInputSchema = z.strictObject({ name: nameSchema, ...fields, applicationId: z.optional(z.string().check(z.minLength(1), z.maxLength(200))) });
/** What `updateEventType` accepts: any of the fields (null puts description and schema back to none). */
export const eventTypeChangeSchema = z.strictObject(fields).check(z.refine((v) => Object.keys(v).length > 0, "send at least one field to change"));
export const catalogueSettingsSchema = z.strictObject({ strict: z.boolean() });

interface Row {
  application_id: string; name: string; description: string | null; schema: Record<string, unknown> | null; examples: unknown[];
  version: number; deprecated: boolean; validation: ValidationMode; created_at: Date; updated_at: Date;
}
const toEventType = (r: Row): EventType => ({
  applicationId: r.application_id, name: r.name, description: r.description, schema: r.schema, examples: r.examples,
  version: r.version, deprecated: r.deprecated, validation: r.validation, createdAt: r.created_at, updatedAt: r.updated_at,
});

/** The schema compiles and every example is valid data for it. */
function checkSchemaAndExamples(schema: Record<string, unknown> | null | undefined, examples: unknown[] | undefined): void {
  if (!schema) return;
  const validate = validatorFor(schema);
  for (const [i, example] of (examples ?? []).entries()) {
    if (!validate(example)) {
      const issues = schemaIssues(validate.errors).map((issue) => ({ path: `examples[${i}]${issue.path.slice(4)}`, message: issue.message }));
      throw new OutboundValidationError(`Invalid event type: examples[${i}] does not match its schema: ${issues[0]!.path}: ${issues[0]!.message}.`, issues);
    }
  }
}

/** Any change to validation moves the catalogue's revision: enqueuers reload their validators. */
const BUMP = "UPDATE outbound_catalogue_revision SET token = gen_random_uuid()::text";

/**
 * Adds an event type to the application's catalogue (default application unless `applicationId`).
 * The schema must compile and each example must satisfy it. A name already there: 409.
 */
export async function createEventType(q: Queryable, input: unknown): Promise<EventType> {
  const v = parseOrThrow(eventTypeInputSchema, input, "event type");
  checkSchemaAndExamples(v.schema, v.examples);
  const app = v.applicationId ?? DEFAULT_APPLICATION_ID;
  const { rows } = await q.query<Row>(
    `WITH app AS (SELECT id FROM outbound_applications WHERE id = $1 AND deleted_at IS NULL),
     created AS (
       INSERT INTO outbound_event_types (application_id, name, description, schema, examples, deprecated, validation)
       SELECT app.id, $2, $3, $4::jsonb, $5::jsonb, $6, $7 FROM app
       ON CONFLICT (application_id, name) DO NOTHING
       RETURNING *
     ),
     bumped AS (${BUMP} WHERE EXISTS (SELECT 1 FROM created) RETURNING 1)
     SELECT created.*, (SELECT count(*) FROM app) AS live, (SELECT count(*) FROM bumped) AS bumped FROM (SELECT 1) one LEFT JOIN created ON true`,
    [app, v.name, v.description ?? null, v.schema ? JSON.stringify(v.schema) : null, JSON.stringify(v.examples ?? []), v.deprecated ?? false, v.validation ?? "off"],
  );
  const row = rows[0] as Row & { live: string };
  if (Number(row.live) === 0) throw new NotFoundError("application", app);
  if (row.name === null) throw new EventTypeExistsError(app, v.name);
  return toEventType(row);
}

export class EventTypeExistsError extends Error {
  readonly code = "event_type_exists";
  readonly status = 409;
  constructor(readonly applicationId: string, readonly eventType: string) {
    super(`The event type ${eventType} is already in the catalogue of ${applicationId}; change it with PATCH /event-types/${eventType}.`);
    this.name = "EventTypeExistsError";
  }
}

export async function getEventType(q: Queryable, name: string, applicationId = DEFAULT_APPLICATION_ID): Promise<EventType> {
  const { rows } = await q.query<Row>("SELECT * FROM outbound_event_types WHERE application_id = $1 AND name = $2", [applicationId, name]);
  if (!rows[0]) throw new NotFoundError("event type", name);
  return toEventType(rows[0]);
}

/** The application's catalogue, by name; `after` pages. */
export async function listEventTypes(q: Queryable, options: { applicationId?: string; limit?: number; after?: string; includeDeprecated?: boolean } = {}): Promise<EventType[]> {
  const { rows } = await q.query<Row>(
    `SELECT * FROM outbound_event_types
     WHERE application_id = $1 AND ($2::text IS NULL OR name > $2) AND ($4::boolean OR NOT deprecated)
     ORDER BY name LIMIT $3`,
    [options.applicationId ?? DEFAULT_APPLICATION_ID, options.after ?? null, options.limit ?? 100, options.includeDeprecated ?? true],
  );
  return rows.map(toEventType);
}

/** Changes the given fields; a new schema is a new version (examples are checked against the schema in force). */
export async function updateEventType(q: Queryable, name: string, input: unknown, applicationId = DEFAULT_APPLICATION_ID): Promise<EventType> {
  const v = parseOrThrow(eventTypeChangeSchema, input, "event type change");
  const current = await getEventType(q, name, applicationId);
  const schema = v.schema === undefined ? current.schema : v.schema;
  checkSchemaAndExamples(schema, v.examples ?? current.examples);
  const schemaChanged = v.schema !== undefined && canonicalJson(v.schema) !== canonicalJson(current.schema);
  const { rows } = await q.query<Row>(
    `WITH changed AS (
       UPDATE outbound_event_types SET
         description = CASE WHEN $3 THEN $4 ELSE description END,
         schema = CASE WHEN $5 THEN $6::jsonb ELSE schema END,
         version = version + CASE WHEN $5 THEN 1 ELSE 0 END,
         examples = coalesce($7::jsonb, examples),
         deprecated = coalesce($8, deprecated),
         validation = coalesce($9, validation),
         updated_at = now()
       WHERE application_id = $1 AND name = $2
       RETURNING *
     ),
     bumped AS (${BUMP} WHERE EXISTS (SELECT 1 FROM changed) RETURNING 1)
     SELECT changed.*, (SELECT count(*) FROM bumped) AS bumped FROM changed`,
    [applicationId, name, v.description !== undefined, v.description ?? null, schemaChanged, schema ? JSON.stringify(schema) : null,
      v.examples ? JSON.stringify(v.examples) : null, v.deprecated ?? null, v.validation ?? null],
  );
  if (!rows[0]) throw new NotFoundError("event type", name);
  return toEventType(rows[0]);
}

/** Removes it from the catalogue (events of that type are still accepted, unvalidated). */
export async function deleteEventType(q: Queryable, name: string, applicationId = DEFAULT_APPLICATION_ID): Promise<{ name: string; deleted: true }> {
  const { rows } = await q.query<{ name: string }>(
    `WITH gone AS (DELETE FROM outbound_event_types WHERE application_id = $1 AND name = $2 RETURNING name),
     bumped AS (${BUMP} WHERE EXISTS (SELECT 1 FROM gone) RETURNING 1)
     SELECT gone.name, (SELECT count(*) FROM bumped) AS bumped FROM gone`,
    [applicationId, name],
  );
  if (!rows[0]) throw new NotFoundError("event type", name);
  return { name, deleted: true };
}

export async function getCatalogueSettings(q: Queryable, applicationId = DEFAULT_APPLICATION_ID): Promise<{ applicationId: string; strict: boolean }> {
  const { rows } = await q.query<{ strict: boolean }>("SELECT strict FROM outbound_catalogue_settings WHERE application_id = $1", [applicationId]);
  return { applicationId, strict: rows[0]?.strict ?? false };
}

export async function setCatalogueSettings(q: Queryable, input: unknown, applicationId = DEFAULT_APPLICATION_ID): Promise<{ applicationId: string; strict: boolean }> {
  const v = parseOrThrow(catalogueSettingsSchema, input, "catalogue settings");
  await q.query(
    `INSERT INTO outbound_catalogue_settings (application_id, strict) VALUES ($1, $2)
     ON CONFLICT (application_id) DO UPDATE SET strict = excluded.strict, updated_at = now()`,
    [applicationId, v.strict],
  );
  return { applicationId, strict: v.strict };
}

/**
 * What the catalogue says of a subscription's patterns: the ones that match no catalogue entry
 * are refused when the catalogue is strict (OutboundValidationError), and returned as warnings
 * otherwise. An empty catalogue warns of nothing (there is nothing to compare with).
 */
export async function checkPatternsAgainstCatalogue(q: Queryable, patterns: readonly string[], applicationId: string): Promise<string[]> {
  const { rows } = await q.query<{ name: string | null; strict: boolean | null }>(
    `SELECT t.name, s.strict FROM (SELECT 1) one
     LEFT JOIN outbound_event_types t ON t.application_id = $1
     LEFT JOIN outbound_catalogue_settings s ON s.application_id = $1`,
    [applicationId],
  );
  const names = rows.map((r) => r.name).filter((n): n is string => n !== null);
  const strict = rows[0]?.strict ?? false;
  if (names.length === 0 && !strict) return [];
  const unknown = patterns.filter((p) => !names.some((n) => matchesEventType(p, n)));
  if (unknown.length === 0) return [];
  const hint = (p: string) => {
    const close = names.find((n) => editDistance(n, p) <= 2);
    return close ? ` (did you mean ${close}?)` : "";
  };
  const messages = unknown.map((p) => `${p} matches no event type of the catalogue${hint(p)}`);
  if (strict) {
    throw new OutboundValidationError(
      `Invalid subscription: eventTypes: ${messages[0]}; the catalogue of ${applicationId} is strict (GET /event-types lists its types).`,
      unknown.map((p, i) => ({ path: `eventTypes[${patterns.indexOf(p)}]`, message: messages[i]! })),
    );
  }
  return messages;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row[j]!;
      row[j] = next;
    }
  }
  return row[b.length]!;
}

// ---------------------------------------------------------------------------------------------
// What enqueue uses.

export interface CatalogueValidators {
  token: string;
  /** `<application>\u0000<type>` → its mode and validator (only types with a schema and validation on). */
  byType: Map<string, { mode: Exclude<ValidationMode, "off">; validate: ValidateFunction; version: number }>;
}

const loaded = new Map<string, CatalogueValidators>();
let lastToken = "";

/** The validators enqueue applies before its statement: those of the revision it last saw (none at first). */
export function currentValidators(): CatalogueValidators | undefined {
  return loaded.get(lastToken);
}

/**
 * The validators of the database's current revision: read only when `validators` refused an
 * event, to be sure a refusal is never made on the catalogue of another database or of a
 * revision that has moved on (the statement's own check only covers what it writes).
 */
export async function confirmedValidators(q: Queryable, validators: CatalogueValidators | undefined): Promise<CatalogueValidators> {
  const { rows } = await q.query<{ token: string }>("SELECT token FROM outbound_catalogue_revision");
  const token = rows[0]?.token ?? "";
  return validators?.token === token ? validators : validatorsOf(q, token);
}

/** The validators of the revision `token` (the statement found it moved): loaded once per revision. */
export async function validatorsOf(q: Queryable, token: string): Promise<CatalogueValidators> {
  let found = loaded.get(token);
  if (!found) {
    const { rows } = await q.query<{ token: string; application_id: string | null; name: string; schema: Record<string, unknown>; validation: "warn" | "enforce"; version: number }>(
      `SELECT r.token, t.application_id, t.name, t.schema, t.validation, t.version
       FROM outbound_catalogue_revision r
       LEFT JOIN outbound_event_types t ON t.validation <> 'off' AND t.schema IS NOT NULL`,
    );
    found = { token: rows[0]?.token ?? token, byType: new Map() };
    for (const r of rows) {
      if (r.application_id === null) continue;
      found.byType.set(`${r.application_id}\u0000${r.name}`, { mode: r.validation, validate: validatorFor(r.schema), version: r.version });
    }
    if (loaded.size >= 16) loaded.delete(loaded.keys().next().value!);
    loaded.set(found.token, found);
  }
  lastToken = found.token;
  return found;
}

export class SchemaValidationError extends OutboundValidationError {
  constructor(message: string, issues: Issue[]) {
    super(message, issues);
    this.name = "SchemaValidationError";
  }
}

/**
 * The JSON Schema errors of `data` for an event of `type` in `applicationId`, under `validators`:
 * null when its type is not validated or the data is valid; throws SchemaValidationError under
 * `enforce`.
 */
export function schemaErrorsOf(validators: CatalogueValidators | undefined, applicationId: string, type: string, data: unknown): Issue[] | null {
  const entry = validators?.byType.get(`${applicationId}\u0000${type}`);
  if (!entry || entry.validate(data)) return null;
  const issues = schemaIssues(entry.validate.errors);
  if (entry.mode === "enforce") {
    throw new SchemaValidationError(`Invalid event: data does not match the schema of ${type} (version ${entry.version}): ${issues[0]!.path}: ${issues[0]!.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ""}.`, issues);
  }
  return issues;
}
