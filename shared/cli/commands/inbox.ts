/** `webhooks inbox list|replay`: inbound entries, quarantined ones first of all. */
import { UsageError, intOption, type Command } from "../command.js";
import { printJson, table } from "../output.js";
import { replayCommand } from "./replay.js";

const STATUSES = ["pending", "deferred", "failed", "processed", "quarantined", "ignored"] as const;
type Status = (typeof STATUSES)[number];

export const inboxList: Command = {
  name: "inbox list",
  summary: "List inbound webhook entries, by default the quarantined ones (with their reasons).",
  usage: "inbox list [--status <status>] [--limit <n>]",
  help: `Options:
  --status <s>  ${STATUSES.join(" | ")} (default quarantined)
  --limit <n>   at most n entries (1-1000, default 100)`,
  options: { status: { type: "string", default: "quarantined" }, limit: { type: "string" } },
  async run(inv) {
    const status = String(inv.values.status) as Status;
    if (!STATUSES.includes(status)) throw new UsageError(`--status must be one of ${STATUSES.join(", ")}; got ${JSON.stringify(status)}.`);
    const limit = intOption(inv, "limit", 100, 1, 1000);
    const { entries: rows } = await inv.api().GET("/inbox", { params: { query: { status, limit } } });
    if (inv.json) inv.io.stdout(printJson(rows));
    else if (rows.length === 0) inv.io.stdout(`No ${status} inbox entries.\n`);
    else inv.io.stdout(table(rows, [
      { header: "id", value: (r) => r.id },
      { header: "partner", value: (r) => r.partnerName },
      { header: "event id", value: (r) => r.partnerEventId },
      { header: "status", value: (r) => r.status },
      { header: "attempts", value: (r) => r.attempts },
      { header: "reason", value: (r) => r.quarantineReason ?? r.lastError },
    ]));
  },
};

export const inboxReplay: Command = replayCommand({
  name: "inbox replay",
  summary: "Replay quarantined inbox entries through the normal processing path (recorded).",
  idName: "entry id",
  listCommand: "inbox list",
  everything: "every quarantined entry",
  target: {
    noun: "inbox entry",
    single: (api, id) => api.POST("/inbox/{id}/replay", { params: { path: { id } } }),
    bulk: (api, limit) => api.POST("/inbox/replay", { body: { status: "quarantined", limit } }),
  },
});
