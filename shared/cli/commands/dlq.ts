/** `webhooks dlq list|replay`: outbound dead letters. */
import { intOption, type Command, type Invocation } from "../command.js";
import { printJson, table } from "../output.js";
import { replayCommand } from "./replay.js";

/** The filters `dlq list` and `dlq replay --all` share (the API's dead letter filter). */
const FILTER_OPTIONS = { subscription: { type: "string" }, "event-type": { type: "string" }, reason: { type: "string" }, since: { type: "string" }, until: { type: "string" } } as const;
const filterHelp = (prefix: string) => `  --subscription <id>   ${prefix}only this subscription's
  --event-type <type>   ${prefix}only events of this type
  --reason <prefix>     ${prefix}only reasons starting so (exhausted, permanent)
  --since <time>        ${prefix}only those that died at or after (ISO 8601, e.g. 2026-01-31T00:00:00Z)
  --until <time>        ${prefix}only those that died before
`;

function filterOf(inv: Invocation) {
  return {
    subscriptionId: inv.values.subscription as string | undefined, eventType: inv.values["event-type"] as string | undefined,
    reason: inv.values.reason as string | undefined, since: inv.values.since as string | undefined, until: inv.values.until as string | undefined,
  };
}

/** What the filter selects, in words: ` of subscription sub_1 whose reason starts "permanent"`, or "". */
function describeFilter(inv: Invocation): string {
  const f = filterOf(inv);
  const parts = [
    f.subscriptionId && `of subscription ${f.subscriptionId}`,
    f.eventType && `of type ${f.eventType}`,
    f.reason && `whose reason starts ${JSON.stringify(f.reason)}`,
    f.since && `dead since ${f.since}`,
    f.until && `dead before ${f.until}`,
  ].filter(Boolean);
  return parts.length ? ` ${parts.join(" ")}` : "";
}

export const dlqList: Command = {
  name: "dlq list",
  summary: "List outbound deliveries that will not be retried automatically (dead letters), in id order.",
  usage: "dlq list [--subscription <id>] [--event-type <type>] [--reason <prefix>] [--since <time>] [--until <time>] [--limit <n>]",
  help: `Options:
${filterHelp("")}  --limit <n>           at most n entries (1-1000, default 100)

Examples:
  webhooks dlq list --reason exhausted --since 2026-01-31T00:00:00Z
  webhooks dlq list --json | jq -r '.[].id'`,
  options: { ...FILTER_OPTIONS, limit: { type: "string" } },
  async run(inv) {
    const limit = intOption(inv, "limit", 100, 1, 1000);
    const { deadLetters: rows } = await inv.api().GET("/dead-letters", { params: { query: { ...filterOf(inv), limit } } });
    if (inv.json) inv.io.stdout(printJson(rows));
    else if (rows.length === 0) inv.io.stdout(`No dead letters${describeFilter(inv)}.\n`);
    else inv.io.stdout(table(rows, [
      { header: "id", value: (r) => r.id },
      { header: "event type", value: (r) => r.eventType },
      { header: "attempts", value: (r) => r.attempts },
      { header: "dead at", value: (r) => r.deadAt },
      { header: "reason", value: (r) => r.deadReason },
    ]));
  },
};

export const dlqReplay: Command = replayCommand({
  name: "dlq replay",
  summary: "Replay dead letters. Each goes back to pending and through the normal delivery path (recorded).",
  idName: "delivery id",
  listCommand: "dlq list",
  everything: "every dead letter",
  target: {
    noun: "dead letter",
    single: (api, id) => api.POST("/dead-letters/{id}/replay", { params: { path: { id } } }),
    bulk: (api, limit, inv) => api.POST("/dead-letters/replay", { body: { filter: filterOf(inv), limit } }),
    selection: describeFilter,
  },
  filters: { options: FILTER_OPTIONS, help: filterHelp("with --all: ") },
});
