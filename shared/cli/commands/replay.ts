/**
 * Replaying many entries, shared by `dlq replay` and `inbox replay`: explicit ids one by one,
 * or `--all` through the bulk endpoint, with progress on stderr and a summary at the end.
 */
import { ApiError, type ApiClient } from "../api.js";
import { OperationError, UsageError, type Command, type Invocation } from "../command.js";
import { printJson } from "../output.js";

export interface ReplayTarget {
  /** For messages: "dead letter", "inbox entry". */
  noun: string;
  /** Replays one (its operation, e.g. `POST /dead-letters/{id}/replay`). */
  single(api: ApiClient, id: string): Promise<unknown>;
  /** Replays at most `limit` of what the filter options of `inv` select; the answer lists the ids replayed. */
  bulk(api: ApiClient, limit: number, inv: Invocation): Promise<{ replayed: unknown[] }>;
  /** What the filter options of `inv` select, in words (` of subscription sub_1`), or "" for everything. */
  selection?(inv: Invocation): string;
}

/** `<noun> replay <id>... | --all [--limit <n>]`, the same shape for every replayable list. */
export function replayCommand(spec: {
  name: string;
  summary: string;
  /** How the ids are named in the usage line, e.g. "delivery id". */
  idName: string;
  /** The command that lists the ids, e.g. "dlq list". */
  listCommand: string;
  /** What `--all` replays, e.g. "every dead letter". */
  everything: string;
  target: ReplayTarget;
  /** Options that narrow `--all` (e.g. `--subscription`), and their help lines. */
  filters?: { options: NonNullable<Command["options"]>; help: string };
}): Command {
  const arg = `<${spec.idName}>`;
  return {
    name: spec.name,
    summary: spec.summary,
    usage: `${spec.name} ${arg}... | --all [--limit <n>]`,
    help: `Arguments:
  ${arg.padEnd(15)} one or more ids from \`webhooks ${spec.listCommand}\`

Options:
  --all           replay ${spec.everything} (in batches; progress on stderr)
  --limit <n>     with --all: replay at most n (default 1000)
${spec.filters?.help ?? ""}
Exit code 1 if any replay failed.`,
    options: { all: { type: "boolean", default: false }, limit: { type: "string" }, ...spec.filters?.options },
    positionals: [0, 1000],
    run: (inv) => runReplay(inv, spec.target),
  };
}

export interface ReplayResult {
  replayed: string[];
  failed: { id: string; error: string }[];
}

/** Runs the replay described by `inv` (positional ids, or `--all` with `--limit`). */
export async function runReplay(inv: Invocation, target: ReplayTarget): Promise<number> {
  const all = inv.values.all === true;
  const ids = inv.positionals;
  if (all && ids.length > 0) throw new UsageError("Give either ids or --all, not both.");
  if (!all && ids.length === 0) throw new UsageError(`Give the id of at least one ${target.noun}, or --all.`);
  const filtered = Object.keys(inv.values).filter((k) => !["all", "limit", "json", "url", "token", "help"].includes(k) && inv.values[k] !== undefined);
  if (!all && filtered.length > 0) throw new UsageError(`--${filtered[0]} narrows --all; add --all, or give ids alone.`);
  const api = inv.api();
  const result = all ? await replayAll(api, inv, target) : await replayEach(api, inv, target, ids);
  const total = result.replayed.length;
  if (inv.json) inv.io.stdout(printJson({ replayed: total, ids: result.replayed, failed: result.failed }));
  else {
    const selected = all ? target.selection?.(inv) ?? "" : "";
    inv.io.stdout(`Replayed ${total} ${target.noun}${total === 1 ? "" : "s"}${selected}${result.failed.length ? `; ${result.failed.length} failed` : ""}.\n`);
    for (const f of result.failed) inv.io.stdout(`  ${f.id}: ${f.error}\n`);
  }
  if (result.failed.length > 0) throw new OperationError(`${result.failed.length} of ${ids.length} replays failed (see above); fix the cause and replay them again.`);
  return 0;
}

async function replayEach(api: ApiClient, inv: Invocation, target: ReplayTarget, ids: string[]): Promise<ReplayResult> {
  const result: ReplayResult = { replayed: [], failed: [] };
  for (const [i, id] of ids.entries()) {
    try {
      await target.single(api, id);
      result.replayed.push(id);
    } catch (error) {
      // Unreachable server or bad token: stop at once, the rest would fail the same way.
      if (error instanceof ApiError && (error.status === 0 || error.status === 401)) throw error;
      result.failed.push({ id, error: (error as Error).message });
    }
    if (ids.length > 1) inv.io.stderr(`replaying ${i + 1}/${ids.length}\r`);
  }
  if (ids.length > 1) inv.io.stderr("\n");
  return result;
}

async function replayAll(api: ApiClient, inv: Invocation, target: ReplayTarget): Promise<ReplayResult> {
  const limit = Number(inv.values.limit ?? 1000);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) throw new UsageError(`--limit must be an integer from 1 to 100000; got ${JSON.stringify(inv.values.limit)}.`);
  // The server replays in batches; ask for batches until it says none are left or the limit is reached.
  const batch = Math.min(limit, 500);
  const replayed: string[] = [];
  const selected = target.selection?.(inv) ?? "";
  inv.io.stderr(`replaying ${selected ? `${target.noun}s${selected}` : `every ${target.noun}`} (at most ${limit})…\n`);
  while (replayed.length < limit) {
    const want = Math.min(batch, limit - replayed.length);
    const ids = (await target.bulk(api, want, inv)).replayed.map(String);
    replayed.push(...ids);
    inv.io.stderr(`replayed ${replayed.length}\n`);
    if (ids.length < want) break;
  }
  return { replayed, failed: [] };
}
