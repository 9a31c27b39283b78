/**
 * `webhooks applications create|list|delete`, `webhooks keys create|list|revoke`, `webhooks audit`:
 * tenants, API keys and the audit log (issue 17, docs/tenancy.md). Operator commands: they need
 * ADMIN_TOKEN or an operator key (`--token`).
 */
import { ApiError, type ApiBody, type ApiData } from "../api.js";
import { intOption, OperationError, UsageError, type Command } from "../command.js";
import { printJson, record, table } from "../output.js";

type ApiKey = ApiData<"/keys/{id}", "delete">;

const scopeOf = (k: ApiKey) => `${k.applicationId ?? "operator"} (${k.access === "read" ? "read-only" : "read-write"})`;

export const applicationsCreate: Command = {
  name: "applications create",
  summary: "Create an application (a tenant): its subscriptions, events and deliveries are kept apart.",
  usage: "applications create <name>",
  help: `Example:
  webhooks applications create "Acme Corp"
  webhooks keys create --application app_... --description "Acme's portal"`,
  positionals: [1, 1],
  async run(inv) {
    const name = inv.positionals[0]!;
    if (!name.trim()) throw new UsageError("Give the application a name, e.g. webhooks applications create \"Acme Corp\".");
    const app = await inv.api().POST("/applications", { body: { name } });
    inv.io.stdout(inv.json ? printJson(app) : `Created ${app.id}.\n${record({ id: app.id, name: app.name, created: app.createdAt })}`);
  },
};

export const applicationsList: Command = {
  name: "applications list",
  summary: "List applications (the default one included), in id order.",
  usage: "applications list [--limit <n>]",
  help: `Options:
  --limit <n>   at most n (1-1000, default 100)`,
  options: { limit: { type: "string" } },
  async run(inv) {
    const { applications: rows } = await inv.api().GET("/applications", { params: { query: { limit: intOption(inv, "limit", 100, 1, 1000) } } });
    if (inv.json) inv.io.stdout(printJson(rows));
    else inv.io.stdout(table(rows, [
      { header: "id", value: (r) => r.id },
      { header: "name", value: (r) => r.name },
      { header: "created", value: (r) => r.createdAt },
    ]));
  },
};

export const applicationsDelete: Command = {
  name: "applications delete",
  summary: "Delete an application. Refused while it has subscriptions, unless --cascade.",
  usage: "applications delete <application id> [--cascade]",
  help: `Options:
  --cascade   also delete its subscriptions: their pending deliveries are cancelled (kept, with
              their attempts, as history). Its keys are revoked either way.

Its events, deliveries and dead letters stay readable by operators. The default application cannot
be deleted.`,
  options: { cascade: { type: "boolean" } },
  positionals: [1, 1],
  async run(inv) {
    const id = inv.positionals[0]!;
    let r: ApiData<"/applications/{id}", "delete">;
    try {
      r = await inv.api().DELETE("/applications/{id}", { params: { path: { id }, query: inv.values.cascade ? { cascade: "true" } : {} } });
    } catch (error) {
      // The API's advice names its query parameter; here the same choice is the --cascade flag.
      if (error instanceof ApiError && error.code === "application_in_use") {
        throw new OperationError(`${error.message.replace(/,? ?or pass cascade=true to delete them with it/, "")} To delete them with it: webhooks applications delete ${id} --cascade`);
      }
      throw error;
    }
    inv.io.stdout(inv.json ? printJson(r)
      : `Deleted ${r.id}: ${r.deletedSubscriptions} subscription(s) deleted, ${r.cancelledDeliveries} pending deliveries cancelled (kept as history), ${r.revokedKeys} key(s) revoked.\n`);
  },
};

export const keysCreate: Command = {
  name: "keys create",
  summary: "Create an API key. The key is printed once; only its hash is kept.",
  usage: "keys create --application <id> | --operator [--read-only] [--description <text>]",
  help: `Options (one of the first two is required: a key's reach is chosen, never defaulted):
  --application <id>   scope it to one application: it sees and changes that application only
  --operator           an operator key: every application, keys and the audit log included
  --read-only          it reads, and changes nothing
  --description <text> what it is for

It works at once, on every server and function, without a restart. Examples:
  webhooks keys create --operator --read-only --description "dashboards"
  webhooks keys create --application app_... --description "Acme's portal"`,
  options: { application: { type: "string" }, operator: { type: "boolean" }, "read-only": { type: "boolean" }, description: { type: "string" } },
  async run(inv) {
    const operator = inv.values.operator === true;
    if (operator === (inv.values.application !== undefined)) {
      throw new UsageError(operator
        ? "Give either --application <id> or --operator, not both."
        : "Choose the key's scope: --application <id> (one application; see `webhooks applications list`) or --operator (every application).");
    }
    const body: ApiBody<"/keys", "post"> = { access: inv.values["read-only"] ? "read" : "write" };
    if (inv.values.application !== undefined) body.applicationId = inv.values.application as string;
    if (inv.values.description !== undefined) body.description = inv.values.description as string;
    const key = await inv.api().POST("/keys", { body });
    if (inv.json) inv.io.stdout(printJson(key));
    else inv.io.stdout(`Created ${key.id}, scope ${scopeOf(key)}. The key, shown this once (send it as Authorization: Bearer <key>):\n\n  ${key.key}\n\n`);
  },
};

export const keysList: Command = {
  name: "keys list",
  summary: "List API keys (never the keys themselves), revoked ones included unless --active.",
  usage: "keys list [--application <id>] [--active] [--limit <n>]",
  help: `Options:
  --application <id>   only the keys of this application
  --active             leave out revoked keys
  --limit <n>          at most n (1-1000, default 100)`,
  options: { application: { type: "string" }, active: { type: "boolean" }, limit: { type: "string" } },
  async run(inv) {
    const { keys: rows } = await inv.api().GET("/keys", { params: { query: {
      applicationId: inv.values.application as string | undefined,
      active: inv.values.active ? "true" : undefined,
      limit: intOption(inv, "limit", 100, 1, 1000),
    } } });
    if (inv.json) inv.io.stdout(printJson(rows));
    else inv.io.stdout(table(rows, [
      { header: "id", value: (r) => r.id },
      { header: "scope", value: scopeOf },
      { header: "description", value: (r) => r.description },
      { header: "created", value: (r) => `${r.createdAt} by ${r.createdBy}` },
      { header: "revoked", value: (r) => r.revokedAt },
    ]));
  },
};

export const keysRevoke: Command = {
  name: "keys revoke",
  summary: "Revoke an API key at once: its next request is refused (401).",
  usage: "keys revoke <key id>",
  help: `Example:
  webhooks keys revoke key_0123456789abcdef`,
  positionals: [1, 1],
  async run(inv) {
    const id = inv.positionals[0]!;
    if (id.startsWith("whk_")) throw new UsageError("Give the key's id (key_…, as `webhooks keys list` shows it), not the key itself.");
    const key = await inv.api().DELETE("/keys/{id}", { params: { path: { id } } });
    inv.io.stdout(inv.json ? printJson(key) : `Revoked ${key.id} (${scopeOf(key)}) at ${key.revokedAt}.\n`);
  },
};

export const audit: Command = {
  name: "audit",
  summary: "The audit log: every management change, who made it (key id or bootstrap), newest first.",
  usage: "audit [--actor <key id|bootstrap>] [--operation <id>] [--application <id>] [--resource <id>] [--limit <n>]",
  help: `Options:
  --actor <who>          a key id (key_…) or bootstrap (ADMIN_TOKEN)
  --operation <id>       an operation id of /openapi.json, e.g. deleteSubscription
  --application <id>     changes within this application
  --resource <id>        changes of this resource
  --limit <n>            at most n (1-1000, default 100)

Example:
  webhooks audit --actor bootstrap --limit 20`,
  options: { actor: { type: "string" }, operation: { type: "string" }, application: { type: "string" }, resource: { type: "string" }, limit: { type: "string" } },
  async run(inv) {
    const { entries: rows } = await inv.api().GET("/audit-log", { params: { query: {
      actor: inv.values.actor as string | undefined,
      operation: inv.values.operation as string | undefined,
      applicationId: inv.values.application as string | undefined,
      resourceId: inv.values.resource as string | undefined,
      limit: intOption(inv, "limit", 100, 1, 1000),
    } } });
    if (inv.json) inv.io.stdout(printJson(rows));
    else if (rows.length === 0) inv.io.stdout("No changes recorded.\n");
    else inv.io.stdout(table(rows, [
      { header: "at", value: (r) => r.at },
      { header: "actor", value: (r) => r.actor },
      { header: "operation", value: (r) => r.operation },
      { header: "resource", value: (r) => r.resourceId },
      { header: "application", value: (r) => r.applicationId },
      { header: "status", value: (r) => r.status },
    ]));
  },
};
