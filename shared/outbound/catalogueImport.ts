/**
 * Import of event types from an OpenAPI document (3.1 `webhooks`, as Svix and Convoy read them):
 * each webhook's key is the event type's name, its operation's summary/description the
 * description, its JSON request body the schema and examples. Schemas that `$ref` the document's
 * `components.schemas` get those as `$defs` (refs rewritten), so the stored schema stands alone.
 * When the body is an envelope (`properties.data` beside `type`), the schema of `data` is kept,
 * since the catalogue describes `data`.
 */
import * as z from "zod/mini";
import type { Queryable } from "../db/port.js";
import { canonicalJson, createEventType, EventTypeExistsError, getEventType, updateEventType } from "./catalogue.js";
import { eventTypeProblem } from "./eventTypes.js";
import { OutboundValidationError } from "./errors.js";
import { parseOrThrow } from "./validation.js";
import { DEFAULT_APPLICATION_ID } from "../tenancy/defaults.js";

export const importInputSchema = z.strictObject({
  /** The OpenAPI document (JSON). */
  document: z.record(z.string(), z.unknown()),
  /** Validation of the created types. Default: off. */
  validation: z.optional(z.enum(["off", "warn", "enforce"])),
  /** Update types already in the catalogue (default true); false leaves them as they are. */
  overwrite: z.optional(z.boolean()),
  applicationId: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
});

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const COMPONENT_REF = "#/components/schemas/";

/** `schema` with refs to components rewritten to `$defs`, and the components it reaches added as `$defs`. */
function standalone(schema: Json, components: Json, where: string): Json {
  const needed = new Set<string>();
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (!isObject(node)) return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string" && v.startsWith(COMPONENT_REF)) {
        const name = decodeURIComponent(v.slice(COMPONENT_REF.length));
        if (!isObject(components[name])) throw new OutboundValidationError(`Invalid OpenAPI document: ${where}: $ref ${v} names no schema of components.schemas.`, [{ path: where, message: `unresolved $ref ${v}` }]);
        if (!needed.has(name)) {
          needed.add(name);
          rewrite(components[name]); // collects what it needs in turn
        }
        out[k] = `#/$defs/${encodeURIComponent(name)}`;
      } else {
        out[k] = rewrite(v);
      }
    }
    return out;
  };
  const root = rewrite(schema) as Json;
  if (needed.size === 0) return root;
  const defs: Json = { ...(isObject(root.$defs) ? root.$defs : {}) };
  for (const name of needed) defs[name] = rewrite(components[name]);
  return { ...root, $defs: defs };
}

/** The event types a document describes, or why an entry was skipped. */
export function eventTypesOfDocument(document: Json): { types: { name: string; description: string | null; schema: Json | null; examples: unknown[] }[]; skipped: { key: string; reason: string }[] } {
  const webhooks = document.webhooks;
  if (!isObject(webhooks)) {
    throw new OutboundValidationError("Invalid OpenAPI document: it has no `webhooks` object (OpenAPI 3.1); each of its entries, keyed by event type, becomes an event type.", [{ path: "document.webhooks", message: "required" }]);
  }
  const components = isObject(document.components) && isObject(document.components.schemas) ? document.components.schemas : {};
  const types = [];
  const skipped = [];
  for (const [key, item] of Object.entries(webhooks)) {
    const problem = eventTypeProblem(key);
    if (problem) { skipped.push({ key, reason: `not an event type name: ${problem}` }); continue; }
    const op = isObject(item) ? (item.post ?? Object.values(item).find(isObject)) : undefined;
    if (!isObject(op)) { skipped.push({ key, reason: "no operation (post) under it" }); continue; }
    const media = isObject(op.requestBody) && isObject(op.requestBody.content) ? (op.requestBody.content["application/json"] ?? Object.values(op.requestBody.content)[0]) : undefined;
    const where = `document.webhooks.${key}`;
    let schema: Json | null = isObject(media) && isObject(media.schema) ? media.schema : null;
    if (schema) {
      schema = standalone(schema, components, where);
      // An envelope's `data`: resolve one level of $ref to see its properties.
      const shown = typeof schema.$ref === "string" && schema.$ref.startsWith("#/$defs/") && isObject(schema.$defs) ? schema.$defs[decodeURIComponent(schema.$ref.slice(8))] : schema;
      if (isObject(shown) && isObject(shown.properties) && isObject(shown.properties.data) && "type" in shown.properties) {
        schema = { ...(shown.properties.data as Json), ...(schema.$defs ? { $defs: schema.$defs } : {}) };
      }
    }
    const examples: unknown[] = [];
    if (isObject(media)) {
      const envelopeData = (v: unknown) => (isObject(v) && "data" in v && "type" in v ? v.data : v);
      if ("example" in media) examples.push(envelopeData(media.example));
      if (isObject(media.examples)) for (const ex of Object.values(media.examples)) if (isObject(ex) && "value" in ex) examples.push(envelopeData(ex.value));
    }
    const text = [op.summary, op.description].filter((s): s is string => typeof s === "string" && s.length > 0).join(": ");
    types.push({ name: key, description: text ? text.slice(0, 2000) : null, schema, examples: examples.slice(0, 20) });
  }
  return { types, skipped };
}

/** Creates (or, unless `overwrite: false`, updates) the document's event types in the application's catalogue. */
export async function importEventTypes(q: Queryable, input: unknown): Promise<{ created: string[]; updated: string[]; unchanged: string[]; skipped: { key: string; reason: string }[] }> {
  const v = parseOrThrow(importInputSchema, input, "import");
  const applicationId = v.applicationId ?? DEFAULT_APPLICATION_ID;
  const { types, skipped } = eventTypesOfDocument(v.document);
  const created: string[] = [], updated: string[] = [], unchanged: string[] = [];
  for (const t of types) {
    try {
      await createEventType(q, { ...t, validation: v.validation ?? "off", applicationId });
      created.push(t.name);
    } catch (error) {
      if (!(error instanceof EventTypeExistsError)) {
        if (error instanceof OutboundValidationError) throw new OutboundValidationError(`Invalid OpenAPI document: webhooks.${t.name}: ${error.message}`, error.issues, { cause: error });
        throw error;
      }
      const current = await getEventType(q, t.name, applicationId);
      const same = canonicalJson(current.schema) === canonicalJson(t.schema) && current.description === t.description && canonicalJson(current.examples) === canonicalJson(t.examples);
      if (v.overwrite === false || same) { unchanged.push(t.name); continue; }
      await updateEventType(q, t.name, { description: t.description, schema: t.schema, examples: t.examples }, applicationId);
      updated.push(t.name);
    }
  }
  return { created, updated, unchanged, skipped };
}
