/**
 * `webhooks event-types list|get|create|update|delete|import`: the event catalogue (issue 30 item
 * 1, docs/catalogue.md), the API's /event-types routes. Every command acts on one application:
 * `--application <id>`, else an application key's own, else the default one.
 */
import type { ApiBody, ApiData } from "../api.js";
import { UsageError, intOption, type Command, type Invocation } from "../command.js";
import { printJson, record, table } from "../output.js";
import { jsonFileOption, parseJsonText, readText } from "./contentOptions.js";

type EventType = ApiData<"/event-types/{name}">;

const VALIDATIONS = ["off", "warn", "enforce"] as const;
type Validation = (typeof VALIDATIONS)[number];
const APPLICATION_HELP = "  --application <id>     the application whose catalogue (default: the key's own, else the default one)";

const inApp = (inv: Invocation): { applicationId?: string } => ({ applicationId: inv.values.application as string | undefined });

function show(t: EventType): Record<string, unknown> {
  return {
    name: t.name,
    application: t.applicationId,
    version: t.version,
    validation: t.validation,
    deprecated: t.deprecated ? "yes" : "no",
    description: t.description,
    schema: t.schema ? JSON.stringify(t.schema) : "none",
    examples: t.examples.length,
    updated: t.updatedAt,
  };
}

function validationOf(inv: Invocation): Validation | undefined {
  const v = inv.values.validation as Validation | undefined;
  if (v !== undefined && !VALIDATIONS.includes(v)) throw new UsageError(`--validation must be off, warn or enforce; got ${JSON.stringify(v)}.`);
  return v;
}

/** `--schema <file or ->`: a JSON Schema object, read as JSON. */
async function schemaOf(inv: Invocation): Promise<Record<string, unknown> | undefined> {
  const schema = await jsonFileOption(inv, "schema");
  if (schema === undefined) return undefined;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) throw new UsageError("--schema must hold a JSON Schema object (2020-12) of the events' data.");
  return schema as Record<string, unknown>;
}

/** Repeated `--example '<json>'`: each parsed. */
function examplesOf(inv: Invocation): unknown[] | undefined {
  const given = inv.values.example as string[] | undefined;
  if (!given?.length) return undefined;
  return given.map((text) => parseJsonText(text, "--example", `'{"orderId": "ord_1", "amount": 120}'`));
}

export const eventTypesList: Command = {
  name: "event-types list",
  summary: "List the event catalogue: each event type's version, validation and whether it is deprecated.",
  usage: "event-types list [--application <id>] [--no-deprecated] [--limit <n>]",
  help: `Options:
${APPLICATION_HELP}
  --no-deprecated        leave deprecated types out (what a customer should subscribe to)
  --limit <n>            at most n (1-1000, default 100)`,
  options: { application: { type: "string" }, "no-deprecated": { type: "boolean" }, limit: { type: "string" } },
  async run(inv) {
    const limit = intOption(inv, "limit", 100, 1, 1000);
    const answer = await inv.api().GET("/event-types", { params: { query: {
      ...inApp(inv), limit, ...(inv.values["no-deprecated"] ? { includeDeprecated: "false" } : {}),
    } } });
    if (inv.json) return void inv.io.stdout(printJson(answer.eventTypes));
    if (answer.eventTypes.length === 0) return void inv.io.stdout("No event types in the catalogue.\n");
    inv.io.stdout(table(answer.eventTypes, [
      { header: "name", value: (t) => t.name },
      { header: "version", value: (t) => t.version },
      { header: "validation", value: (t) => t.validation },
      { header: "deprecated", value: (t) => (t.deprecated ? "yes" : "") },
      { header: "schema", value: (t) => (t.schema ? "yes" : "") },
      { header: "description", value: (t) => t.description ?? "" },
    ]));
    if (answer.next) inv.io.stdout(`(more: raise --limit, up to 1000)\n`);
  },
};

export const eventTypesGet: Command = {
  name: "event-types get",
  summary: "Show one event type: its schema, examples, version and validation.",
  usage: "event-types get <name> [--application <id>]",
  help: `Options:\n${APPLICATION_HELP}\n\nThe schema and examples in full: --json.`,
  options: { application: { type: "string" } },
  positionals: [1, 1],
  async run(inv) {
    const t = await inv.api().GET("/event-types/{name}", { params: { path: { name: inv.positionals[0]! }, query: inApp(inv) } });
    inv.io.stdout(inv.json ? printJson(t) : record(show(t)));
  },
};

const FIELDS_HELP = `  --description <text>
  --schema <file>        JSON Schema (2020-12) of the events' data, from a JSON file (- reads
                         standard input); it must compile and the examples must satisfy it
  --example <json>       an example of data (repeatable; replaces them all; at most 20)
  --validation <v>       what enqueue does with data the schema refuses: off, warn (accepted,
                         flagged) or enforce (refused, 422)`;

export const eventTypesCreate: Command = {
  name: "event-types create",
  summary: "Add an event type to the catalogue (version 1).",
  usage: "event-types create <name> [--description <text>] [--schema <file>|-] [--example <json>...] [--validation off|warn|enforce] [--deprecated] [--application <id>]",
  help: `Options:
${FIELDS_HELP}
  --deprecated           listed as deprecated from the start
${APPLICATION_HELP}

Example:
  webhooks event-types create order.paid --schema order.paid.schema.json --example '{"orderId":"o1","amount":5}' --validation enforce`,
  options: {
    description: { type: "string" }, schema: { type: "string" }, example: { type: "string", multiple: true },
    validation: { type: "string" }, deprecated: { type: "boolean" }, application: { type: "string" },
  },
  positionals: [1, 1],
  async run(inv) {
    const body: ApiBody<"/event-types", "post"> = { name: inv.positionals[0]! };
    if (inv.values.application !== undefined) body.applicationId = inv.values.application as string;
    if (inv.values.description !== undefined) body.description = inv.values.description as string;
    const schema = await schemaOf(inv);
    if (schema) body.schema = schema;
    const examples = examplesOf(inv);
    if (examples) body.examples = examples;
    const validation = validationOf(inv);
    if (validation) body.validation = validation;
    if (inv.values.deprecated === true) body.deprecated = true;
    const t = await inv.api().POST("/event-types", { body });
    inv.io.stdout(inv.json ? printJson(t) : `Added ${t.name} (version ${t.version}).\n${record(show(t))}`);
  },
};

export const eventTypesUpdate: Command = {
  name: "event-types update",
  summary: "Edit an event type. A new schema is a new version; events enqueued after it are validated by it.",
  usage: "event-types update <name> [--description <text>] [--schema <file>|-|--no-schema] [--example <json>...|--no-examples] [--validation off|warn|enforce] [--deprecated on|off] [--application <id>]",
  help: `Options (each changes that field only):
${FIELDS_HELP}
  --no-schema            no schema (nothing to validate against)
  --no-examples          no examples
  --deprecated on|off
  --description ''       clears it
${APPLICATION_HELP}`,
  options: {
    description: { type: "string" }, schema: { type: "string" }, "no-schema": { type: "boolean" }, example: { type: "string", multiple: true },
    "no-examples": { type: "boolean" }, validation: { type: "string" }, deprecated: { type: "string" }, application: { type: "string" },
  },
  positionals: [1, 1],
  async run(inv) {
    if (inv.values.schema !== undefined && inv.values["no-schema"]) throw new UsageError("Give --schema or --no-schema, not both.");
    if ((inv.values.example as string[] | undefined)?.length && inv.values["no-examples"]) throw new UsageError("Give --example or --no-examples, not both.");
    const change: ApiBody<"/event-types/{name}", "patch"> = {};
    if (inv.values.description !== undefined) change.description = inv.values.description === "" ? null : inv.values.description as string;
    const schema = await schemaOf(inv);
    if (schema) change.schema = schema;
    if (inv.values["no-schema"]) change.schema = null;
    const examples = examplesOf(inv);
    if (examples) change.examples = examples;
    if (inv.values["no-examples"]) change.examples = [];
    const validation = validationOf(inv);
    if (validation) change.validation = validation;
    const deprecated = inv.values.deprecated as string | undefined;
    if (deprecated !== undefined) {
      if (deprecated !== "on" && deprecated !== "off") throw new UsageError(`--deprecated takes on or off; got ${JSON.stringify(deprecated)}.`);
      change.deprecated = deprecated === "on";
    }
    if (Object.keys(change).length === 0) throw new UsageError("Nothing to change: give at least one of --description, --schema, --no-schema, --example, --no-examples, --validation, --deprecated.");
    const t = await inv.api().PATCH("/event-types/{name}", { params: { path: { name: inv.positionals[0]! }, query: inApp(inv) }, body: change });
    inv.io.stdout(inv.json ? printJson(t) : `Updated ${t.name} (version ${t.version}).\n${record(show(t))}`);
  },
};

export const eventTypesDelete: Command = {
  name: "event-types delete",
  summary: "Remove an event type. Its events are still accepted, no longer validated; prefer --deprecated on while it is used.",
  usage: "event-types delete <name> [--application <id>]",
  help: `Options:\n${APPLICATION_HELP}`,
  options: { application: { type: "string" } },
  positionals: [1, 1],
  async run(inv) {
    const r = await inv.api().DELETE("/event-types/{name}", { params: { path: { name: inv.positionals[0]! }, query: inApp(inv) } });
    inv.io.stdout(inv.json ? printJson(r) : `Removed ${r.name} from the catalogue.\n`);
  },
};

export const eventTypesImport: Command = {
  name: "event-types import",
  summary: "Import event types from an OpenAPI document's webhooks (JSON): created, updated, unchanged, skipped.",
  usage: "event-types import <openapi file>|- [--validation off|warn|enforce] [--no-overwrite] [--application <id>]",
  help: `Each entry of the document's \`webhooks\` (OpenAPI 3.1) becomes an event type named by its key,
its schema from the request body, $refs to components.schemas resolved (docs/catalogue.md).
The document must be JSON (a YAML one: convert it first, e.g. \`yq -o json\`).

Options:
  --validation <v>       validation of the types it creates: off (default), warn or enforce
  --no-overwrite         leave the types already in the catalogue as they are
${APPLICATION_HELP}`,
  options: { validation: { type: "string" }, "no-overwrite": { type: "boolean" }, application: { type: "string" } },
  positionals: [1, 1],
  async run(inv) {
    const file = inv.positionals[0]!;
    const text = await readText(file, "event-types import");
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch (error) {
      throw new UsageError(`${file === "-" ? "standard input" : file} is not JSON (${(error as Error).message}); the OpenAPI document must be JSON (convert YAML first, e.g. \`yq -o json\`).`);
    }
    if (typeof document !== "object" || document === null || Array.isArray(document)) throw new UsageError(`${file} must hold an OpenAPI document (a JSON object with "webhooks").`);
    const body: ApiBody<"/event-types/import", "post"> = { document: document as Record<string, unknown> };
    const validation = validationOf(inv);
    if (validation) body.validation = validation;
    if (inv.values["no-overwrite"]) body.overwrite = false;
    if (inv.values.application !== undefined) body.applicationId = inv.values.application as string;
    const r = await inv.api().POST("/event-types/import", { body });
    if (inv.json) return void inv.io.stdout(printJson(r));
    const names = (list: string[]) => (list.length ? list.join(", ") : "none");
    inv.io.stdout(`Imported from ${file}: created ${names(r.created)}; updated ${names(r.updated)}; unchanged ${names(r.unchanged)}.\n` +
      r.skipped.map((s) => `skipped ${s.key}: ${s.reason}\n`).join(""));
  },
};
