/** `webhooks events list|get|resend`: what was enqueued, where it went, and sending it again. */
import { UsageError, intOption, type Command } from "../command.js";
import { printJson, record, table } from "../output.js";


const isTime = (s: string) => !Number.isNaN(Date.parse(s)) && /T/.test(s);

export const eventsList: Command = {
  name: "events list",
  summary: "List events, newest first, by type and time range.",
  usage: "events list [--event-type <type>] [--application <id>] [--since <time>] [--until <time>] [--limit <n>]",
  help: `Options:
  --event-type <type>
                   only this event type (as for dlq list; --type still works)
  --application <id>  only this application's (operators; app_platform: alerts, operational events)
  --since <time>   enqueued at or after (ISO 8601, e.g. 2026-01-31T00:00:00Z)
  --until <time>   enqueued before
  --limit <n>      at most n (1-1000, default 100)`,
  options: { "event-type": { type: "string" }, type: { type: "string" }, application: { type: "string" }, since: { type: "string" }, until: { type: "string" }, limit: { type: "string" } },
  async run(inv) {
    for (const k of ["since", "until"] as const) {
      const v = inv.values[k] as string | undefined;
      if (v !== undefined && !isTime(v)) throw new UsageError(`--${k} must be an ISO 8601 time such as 2026-01-31T00:00:00Z; got ${JSON.stringify(v)}.`);
    }
    const limit = intOption(inv, "limit", 100, 1, 1000);
    const { events: rows } = await inv.api().GET("/events", { params: { query: {
      eventType: (inv.values["event-type"] ?? inv.values.type) as string | undefined, applicationId: inv.values.application as string | undefined, since: inv.values.since as string | undefined, until: inv.values.until as string | undefined, limit,
    } } });
    if (inv.json) inv.io.stdout(printJson(rows));
    else if (rows.length === 0) inv.io.stdout("No events.\n");
    else inv.io.stdout(table(rows, [
      { header: "id", value: (r) => r.id },
      { header: "type", value: (r) => r.type },
      { header: "enqueued", value: (r) => r.createdAt },
    ]));
  },
};

export const eventsGet: Command = {
  name: "events get",
  summary: "Show one event, its data and every delivery of it.",
  usage: "events get <event id>",
  help: "",
  positionals: [1, 1],
  async run(inv) {
    const e = await inv.api().GET("/events/{id}", { params: { path: { id: inv.positionals[0]! } } });
    if (inv.json) return void inv.io.stdout(printJson(e));
    inv.io.stdout(record({ id: e.id, type: e.type, "occurred at": e.occurredAt, enqueued: e.createdAt, data: JSON.stringify(e.data) }));
    inv.io.stdout(e.deliveries.length === 0 ? "No deliveries.\n" : table(e.deliveries, [
      { header: "delivery", value: (d) => d.id },
      { header: "status", value: (d) => d.status },
      { header: "attempts", value: (d) => d.attempts },
      { header: "origin", value: (d) => d.origin ?? "fan-out" },
    ]));
  },
};

export const eventsResend: Command = {
  name: "events resend",
  summary: "Send an event again, delivered or not, to one or all of its subscriptions (new deliveries, recorded).",
  usage: "events resend <event id> [--subscription <id>]",
  help: `Options:
  --subscription <id>   only to this one of its subscriptions (default: all of them)`,
  options: { subscription: { type: "string" } },
  positionals: [1, 1],
  async run(inv) {
    const sub = inv.values.subscription as string | undefined;
    const r = await inv.api().POST("/events/{id}/resend", { params: { path: { id: inv.positionals[0]! } }, body: sub ? { subscriptionId: sub } : {} });
    inv.io.stdout(inv.json ? printJson(r) : `Resent ${r.eventId}: ${r.deliveries.length} new deliver${r.deliveries.length === 1 ? "y" : "ies"}${r.deliveries.map((d) => `\n  ${d.id}`).join("")}\n`);
  },
};
