/** `webhooks subscriptions keys|skip-key`: the ordering keys of an ordered subscription (issue 15, docs/outbound.md#ordered-delivery). */
import { intOption, type Command } from "../command.js";
import { printJson, record, table } from "../output.js";

export const subscriptionsKeys: Command = {
  name: "subscriptions keys",
  summary: "List the ordering keys of an ordered subscription that have work: the delivery in progress, how many wait behind it, and whether a dead letter blocks the key.",
  usage: "subscriptions keys <subscription id> [--blocked] [--limit <n>] [--cursor <next>]",
  help: `Idle keys are not listed. A blocked key waits until its dead letter is replayed
(\`webhooks dlq replay <delivery id>\`: it goes again, first) or the key is skipped
(\`webhooks subscriptions skip-key\`).

Options:
  --blocked         only the keys a dead letter blocks
  --limit <n>       at most n keys (1-1000, default 100)
  --cursor <next>   the page after the one that printed this cursor

Example:
  webhooks subscriptions keys sub_123 --blocked`,
  options: { blocked: { type: "boolean" }, limit: { type: "string" }, cursor: { type: "string" } },
  positionals: [1, 1],
  async run(inv) {
    const limit = intOption(inv, "limit", 100, 1, 1000);
    const answer = await inv.api().GET("/subscriptions/{id}/ordering-keys", { params: { path: { id: inv.positionals[0]! }, query: {
      limit, blocked: inv.values.blocked === true ? "true" : undefined, cursor: inv.values.cursor as string | undefined,
    } } });
    if (inv.json) return inv.io.stdout(printJson(answer));
    const rows = answer.orderingKeys;
    if (rows.length === 0) inv.io.stdout(inv.values.blocked ? "No blocked keys.\n" : "No ordering key has work.\n");
    else inv.io.stdout(table(rows, [
      { header: "key", value: (r) => r.orderingKey },
      { header: "state", value: (r) => (r.blocked ? "blocked" : "moving") },
      { header: "waiting", value: (r) => r.waiting },
      { header: "current delivery", value: (r) => r.head?.id ?? "(dead letter purged)" },
      { header: "status", value: (r) => r.head?.status },
      { header: "reason", value: (r) => r.head?.deadReason },
    ]));
    if (answer.next) inv.io.stdout(`More: --cursor ${answer.next}\n`);
  },
};

export const subscriptionsSkipKey: Command = {
  name: "subscriptions skip-key",
  summary: "Skip the dead letter that blocks an ordering key: the key's next delivery goes; the dead letter stays a dead letter.",
  usage: "subscriptions skip-key <subscription id> <ordering key> [--delivery <dead letter id>]",
  help: `Options:
  --delivery <id>   skip only if this dead letter is the one blocking the key (as listed by
                    \`webhooks subscriptions keys\`), so a repeated command never skips the next one

Replayed later, a skipped dead letter is sent after what its key has by then.

Example:
  webhooks subscriptions skip-key sub_123 order/42 --delivery evt_9:sub_123`,
  options: { delivery: { type: "string" } },
  positionals: [2, 2],
  async run(inv) {
    const [id, key] = inv.positionals as [string, string];
    const delivery = inv.values.delivery as string | undefined;
    const result = await inv.api().POST("/subscriptions/{id}/ordering-keys/{key}/skip", {
      params: { path: { id, key } }, body: delivery === undefined ? {} : { deliveryId: delivery },
    });
    inv.io.stdout(inv.json ? printJson(result) : `Skipped ${result.skipped ?? "the purged dead letter"} on key ${result.orderingKey}.\n${record({ "now due": result.released ?? "nothing waits" })}`);
  },
};
