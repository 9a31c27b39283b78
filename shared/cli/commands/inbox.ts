/** `webhooks inbox list|replay`: inbound entries, quarantined ones first of all. */
import { UsageError, intOption, type Command } from "../command.js";
import { printJson, table } from "../output.js";
import { itemsOf } from "./lists.js";
import { runReplay } from "./replay.js";

interface InboxEntry {
  id: string | number;
  partnerName?: string;
  partnerEventId?: string;
  eventType?: string | null;
  status?: string;
  attempts?: number;
  lastError?: string | null;
  quarantineReason?: string | null;
  receivedAt?: string;
}

const STATUSES = ["pending", "deferred", "failed", "processed", "quarantined"];

export const inboxList: Command = {
  name: "inbox list",
  summary: "List inbound webhook entries, by default the quarantined ones (with their reasons).",
  usage: "inbox list [--status <status>] [--limit <n>]",
  help: `Options:
  --status <s>  ${STATUSES.join(" | ")} (default quarantined)
  --limit <n>   at most n entries (1-1000, default 100)`,
  options: { status: { type: "string", default: "quarantined" }, limit: { type: "string" } },
  async run(inv) {
    const status = String(inv.values.status);
    if (!STATUSES.includes(status)) throw new UsageError(`--status must be one of ${STATUSES.join(", ")}; got ${JSON.stringify(status)}.`);
    const limit = intOption(inv, "limit", 100, 1, 1000);
    const rows = itemsOf<InboxEntry>(await inv.api().get("/inbox", { status, limit: String(limit) }));
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

export const inboxReplay: Command = {
  name: "inbox replay",
  summary: "Replay quarantined inbox entries through the normal processing path (recorded).",
  usage: "inbox replay <entry id>... | --all [--limit <n>]",
  help: `Arguments:
  <entry id>      one or more ids from \`webhooks inbox list\`

Options:
  --all           replay every quarantined entry (in batches; progress on stderr)
  --limit <n>     with --all: replay at most n (default 1000)

Exit code 1 if any replay failed.`,
  options: { all: { type: "boolean", default: false }, limit: { type: "string" } },
  positionals: [0, 1000],
  run: (inv) =>
    runReplay(inv, {
      noun: "inbox entry",
      single: (id) => `/inbox/${id}/replay`,
      bulk: "/inbox/replay",
      bulkBody: (limit) => ({ status: "quarantined", limit }),
      bulkIds: (answer) => ((answer as { replayed?: string[] })?.replayed ?? []).map(String),
    }),
};
