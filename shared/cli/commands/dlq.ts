/** `webhooks dlq list|replay`: outbound dead letters. */
import { intOption, type Command } from "../command.js";
import { printJson, table } from "../output.js";
import { itemsOf } from "./lists.js";
import { replayCommand } from "./replay.js";

interface DeadLetter {
  id: string;
  subscriptionId?: string;
  eventType?: string;
  attempts?: number;
  deadReason?: string | null;
  deadAt?: string | null;
}

export const dlqList: Command = {
  name: "dlq list",
  summary: "List outbound deliveries that will not be retried automatically (dead letters), in id order.",
  usage: "dlq list [--limit <n>]",
  help: `Options:
  --limit <n>   at most n entries (1-1000, default 100)

Example:
  webhooks dlq list --json | jq -r '.[].id'`,
  options: { limit: { type: "string" } },
  async run(inv) {
    const limit = intOption(inv, "limit", 100, 1, 1000);
    const rows = itemsOf<DeadLetter>(await inv.api().get("/dead-letters", { limit: String(limit) }));
    if (inv.json) inv.io.stdout(printJson(rows));
    else if (rows.length === 0) inv.io.stdout("No dead letters.\n");
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
    single: (id) => `/dead-letters/${id}/replay`,
    bulk: "/dead-letters/replay",
    bulkBody: (limit, inv) => ({
      filter: {
        subscriptionId: inv.values.subscription, eventType: inv.values["event-type"], reason: inv.values.reason,
        since: inv.values.since, until: inv.values.until,
      },
      limit,
    }),
  },
  filters: {
    options: { subscription: { type: "string" }, "event-type": { type: "string" }, reason: { type: "string" }, since: { type: "string" }, until: { type: "string" } },
    help: `  --subscription <id>   with --all: only this subscription's
  --event-type <type>   with --all: only events of this type
  --reason <prefix>     with --all: only reasons starting so (exhausted, permanent)
  --since <time>        with --all: only those that died at or after (ISO 8601, e.g. 2026-01-31T00:00:00Z)
  --until <time>        with --all: only those that died before
`,
  },
});
