/**
 * `webhooks forwarding get|add|update|remove`: a forwarding partner's destinations (issue 30 item
 * 4), each with a content filter and a transformation; the API is /inbound/partners/:partner/forwarding.
 */
import type { ApiBody, ApiData } from "../api.js";
import { UsageError, type Command, type Invocation } from "../command.js";
import { printJson, record, table } from "../output.js";
import { contentFieldsOf } from "./contentOptions.js";

type Destination = ApiData<"/inbound/partners/{partner}/forwarding/destinations", "post">;

function show(d: Destination): Record<string, unknown> {
  return {
    name: d.name,
    source: d.source === "config" ? "PARTNERS forward.url" : "api",
    url: d.url,
    subscription: d.subscriptionId,
    health: d.status === "active" ? "healthy" : d.status,
    paused: d.paused,
    filter: d.filter ? JSON.stringify(d.filter) : "none (every event)",
    transformation: d.transformation ? `${d.transformation.split("\n").length} line(s)` : "none",
    ...(d.secrets ? { secrets: d.secrets.join(" ") } : {}),
    ...(d.warnings?.length ? { warnings: d.warnings.join("; ") } : {}),
  };
}

export const forwardingGet: Command = {
  name: "forwarding get",
  summary: "Show a partner's forwarding: whether it forwards, and each destination with its filter.",
  usage: "forwarding get <partner>",
  help: "Which destinations took one event and which skipped it: `forwarding` of GET /inbox/<id>.",
  positionals: [1, 1],
  async run(inv) {
    const f = await inv.api().GET("/inbound/partners/{partner}/forwarding", { params: { path: { partner: inv.positionals[0]! } } });
    if (inv.json) return void inv.io.stdout(printJson(f));
    inv.io.stdout(`Partner ${f.partner}: ${f.enabled ? "forwards" : "does not forward (set \"forward\" in its PARTNERS entry)"}.\n`);
    if (f.destinations.length === 0) return void inv.io.stdout("No destinations.\n");
    inv.io.stdout(table(f.destinations, [
      { header: "name", value: (d) => d.name },
      { header: "url", value: (d) => d.url },
      { header: "filter", value: (d) => (d.filter ? JSON.stringify(d.filter) : "") },
      { header: "transformation", value: (d) => (d.transformation ? "yes" : "") },
      { header: "health", value: (d) => (d.status === "active" ? "healthy" : d.status) },
      { header: "source", value: (d) => d.source },
    ]));
  },
};

export const forwardingAdd: Command = {
  name: "forwarding add",
  summary: "Add a destination to a partner's forwarding, with a content filter and a transformation.",
  usage: "forwarding add <partner> <name> --endpoint <url> [--filter <json>] [--transformation <file>] [--secret <whsec_...>] [--description <text>]",
  help: `Options:
  --endpoint <url>             where the partner's events are forwarded (required)
  --filter <json>              only events it matches (docs/filters.md), on {id, type, timestamp,
                               data: the partner's body}, e.g. '{"data.data.object.amount": {"$gt": 10000}}'
  --transformation <file>      JavaScript (event) => ({ body, headers?, url? } | null), given the
                               partner's body (docs/transformations.md); - reads standard input
  --secret <whsec_...>         signing secret; default: generated, printed once
  --description <text>`,
  positionals: [2, 2],
  options: { endpoint: { type: "string" }, filter: { type: "string" }, transformation: { type: "string" }, secret: { type: "string", multiple: true }, description: { type: "string" } },
  async run(inv) {
    const [partner, name] = inv.positionals as [string, string];
    const url = inv.values.endpoint as string | undefined;
    if (!url) throw new UsageError("--endpoint <url> is required: where this destination's events are sent.");
    const body: ApiBody<"/inbound/partners/{partner}/forwarding/destinations", "post"> = {
      name, url,
      // Without removal, neither field is ever null.
      ...(await contentFieldsOf(inv, false) as { filter?: Record<string, unknown>; transformation?: string }),
    };
    const secrets = inv.values.secret as string[] | undefined;
    if (secrets?.length) body.secrets = secrets;
    if (inv.values.description !== undefined) body.description = inv.values.description as string;
    const d = await inv.api().POST("/inbound/partners/{partner}/forwarding/destinations", { params: { path: { partner } }, body });
    if (inv.json) inv.io.stdout(printJson(d));
    else inv.io.stdout(`Added destination ${d.name} of partner ${partner}. The secret is shown only now: keep it.\n${record(show(d))}`);
  },
};

export const forwardingUpdate: Command = {
  name: "forwarding update",
  summary: "Change a forward destination's endpoint, filter or transformation (from the next event on).",
  usage: "forwarding update <partner> <name> [--endpoint <url>] [--filter <json> | --no-filter] [--transformation <file> | --no-transformation] [--description <text>]",
  help: `Options:
  --endpoint <url>
  --filter <json>              the new filter (docs/filters.md); --no-filter: every event
  --transformation <file>      the new transformation (- reads standard input); --no-transformation: none
  --description <text>`,
  positionals: [2, 2],
  options: {
    endpoint: { type: "string" }, filter: { type: "string" }, "no-filter": { type: "boolean" },
    transformation: { type: "string" }, "no-transformation": { type: "boolean" }, description: { type: "string" },
  },
  async run(inv) {
    const [partner, name] = inv.positionals as [string, string];
    const body: ApiBody<"/inbound/partners/{partner}/forwarding/destinations/{name}", "patch"> = {};
    if (inv.values.endpoint !== undefined) body.url = inv.values.endpoint as string;
    Object.assign(body, await contentFieldsOf(inv, true));
    if (inv.values.description !== undefined) body.description = inv.values.description as string;
    if (Object.keys(body).length === 0) throw new UsageError("Nothing to change: give --endpoint, --filter/--no-filter, --transformation/--no-transformation or --description.");
    const d = await inv.api().PATCH("/inbound/partners/{partner}/forwarding/destinations/{name}", { params: { path: { partner, name } }, body });
    if (inv.json) inv.io.stdout(printJson(d));
    else inv.io.stdout(`Changed destination ${d.name} of partner ${partner}.\n${record(show(d))}`);
  },
};

export const forwardingRemove: Command = {
  name: "forwarding remove",
  summary: "Remove a forward destination (its pending deliveries are cancelled, its history kept).",
  usage: "forwarding remove <partner> <name>",
  help: "The destination's subscription is deleted; its deliveries stay listable by subscription id.",
  positionals: [2, 2],
  async run(inv) {
    const [partner, name] = inv.positionals as [string, string];
    const r = await inv.api().DELETE("/inbound/partners/{partner}/forwarding/destinations/{name}", { params: { path: { partner, name } } });
    if (inv.json) inv.io.stdout(printJson(r));
    else inv.io.stdout(`Removed destination ${r.name} of partner ${partner} (subscription ${r.subscriptionId}; ${r.cancelledDeliveries} pending deliveries cancelled).\n`);
  },
};
