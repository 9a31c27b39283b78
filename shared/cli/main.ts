/**
 * The `webhooks` command: the management API and the stacks from a terminal.
 * `bin/webhooks.js` loads this file through tsx; `runCli` is exported for callers that embed it.
 * Exit codes: 0 done, 1 the operation failed, 2 the command line was wrong.
 */
import { ApiError } from "./api.js";
import { EXIT, GLOBAL_HELP, OperationError, UsageError, commandHelp, parseInvocation, type Command, type Io } from "./command.js";
import { dlqList, dlqReplay } from "./commands/dlq.js";
import { eventsSend } from "./commands/events.js";
import { eventsGet, eventsList, eventsResend } from "./commands/eventsRead.js";
import { subscriptionsDelete, subscriptionsPause, subscriptionsResume, subscriptionsTest, subscriptionsUpdate } from "./commands/subscriptionChanges.js";
import { inboxList, inboxReplay } from "./commands/inbox.js";
import { forwardingAdd, forwardingGet, forwardingRemove, forwardingUpdate } from "./commands/forwarding.js";
import { listen } from "./commands/listen.js";
import { eventTypesCreate, eventTypesDelete, eventTypesGet, eventTypesImport, eventTypesList, eventTypesUpdate } from "./commands/eventTypes.js";
import { subscriptionsKeys, subscriptionsSkipKey } from "./commands/ordering.js";
import { subscriptionsPublicKeys, subscriptionsRotateSecret } from "./commands/signing.js";
import { compare, deploy, synth } from "./commands/stacks.js";
import { subscriptionsCreate, subscriptionsEnable, subscriptionsGet, subscriptionsList } from "./commands/subscriptions.js";
import { didYouMean } from "./suggest.js";
import { VERSION } from "../version.js";
import { applicationsCreate, applicationsDelete, applicationsList, audit, keysCreate, keysList, keysRevoke } from "./commands/tenancy.js";
import { portalLink, portalLinks, portalRevoke, portalSettings } from "./commands/portal.js";

export const COMMANDS: Command[] = [
  dlqList, dlqReplay, inboxList, inboxReplay, forwardingGet, forwardingAdd, forwardingUpdate, forwardingRemove, eventsSend, eventsList, eventsGet, eventsResend,
  subscriptionsList, subscriptionsCreate, subscriptionsGet, subscriptionsUpdate, subscriptionsPause, subscriptionsResume,
  subscriptionsDelete, subscriptionsTest, subscriptionsEnable, subscriptionsKeys, subscriptionsSkipKey,
  subscriptionsRotateSecret, subscriptionsPublicKeys, listen,
  eventTypesList, eventTypesGet, eventTypesCreate, eventTypesUpdate, eventTypesDelete, eventTypesImport,
  applicationsCreate, applicationsList, applicationsDelete, keysCreate, keysList, keysRevoke, audit,
  portalLink, portalLinks, portalRevoke, portalSettings,
  synth, deploy, compare,
];

/** Options that may come before the command (what `commandFirst` moves) and the overview's own. */
const LEADING_OPTIONS = ["--url", "--token", "--json", "--help", "--version"];

/** `subs` is accepted for `subscriptions`, `apps` for `applications`. */
const GROUP_ALIASES: Record<string, string> = { subs: "subscriptions", apps: "applications" };

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `Usage: webhooks <command> [options]

Operate a multicloud-webhooks platform: dead letters, the inbox, subscriptions, events, the event catalogue, applications, API keys, the audit log, the cloud stacks.

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary.split(". ")[0]!.replace(/\.$/, "")}`).join("\n")}

${GLOBAL_HELP}
  --version        print the version

Run \`webhooks <command> --help\` for a command's arguments and examples.
Exit codes: 0 done, 1 the operation failed, 2 the command line was wrong.
`;
}

/** Finds the command named by the first one or two words of `argv`. */
function resolve(argv: string[]): { command: Command; rest: string[] } | { group: string } | undefined {
  const first = GROUP_ALIASES[argv[0] ?? ""] ?? argv[0];
  const two = COMMANDS.find((c) => c.name === `${first} ${argv[1]}`);
  if (two) return { command: two, rest: argv.slice(2) };
  const one = COMMANDS.find((c) => c.name === first);
  if (one) return { command: one, rest: argv.slice(1) };
  if (first && COMMANDS.some((c) => c.name.startsWith(`${first} `))) return { group: first };
  return undefined;
}

/**
 * Global options written before the command (`webhooks --url <management_url> dlq list`, as the
 * deploy guides and `--help` show the URL first) are moved after it, where the command's parser
 * reads them.
 */
function commandFirst(argv: string[]): string[] {
  const leading: string[] = [];
  let i = 0;
  while (i < argv.length) {
    const arg = argv[i]!;
    if ((arg === "--url" || arg === "--token") && i + 1 < argv.length) {
      leading.push(arg, argv[i + 1]!);
      i += 2;
    } else if (arg === "--json" || /^--(url|token)=/.test(arg)) {
      leading.push(arg);
      i += 1;
    } else break;
  }
  return i === 0 || i === argv.length ? argv : [...argv.slice(i), ...leading];
}

/** Runs the CLI with `argv` (without `node` and the script); resolves to the exit code. */
export async function runCli(args: string[], io: Io): Promise<number> {
  const argv = commandFirst(args);
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    io.stdout(overview());
    return argv.length === 0 ? EXIT.usage : EXIT.ok;
  }
  if (argv[0] === "--version" || argv[0] === "-V") {
    io.stdout(`webhooks ${VERSION}\n`);
    return EXIT.ok;
  }
  // An option where the command should be (`webhooks --jsn dlq list`): say so, not "unknown command".
  if (argv[0]!.startsWith("-")) {
    const name = argv[0]!.split("=")[0]!;
    io.stderr(`webhooks: unknown option ${JSON.stringify(name)}${didYouMean(name, LEADING_OPTIONS)}. Run \`webhooks --help\` for the options.\n`);
    return EXIT.usage;
  }
  const found = resolve(argv);
  if (!found) {
    const words = [...new Set([...COMMANDS.map((c) => c.name.split(" ")[0]!), ...Object.keys(GROUP_ALIASES), "help"])];
    io.stderr(`webhooks: unknown command ${JSON.stringify(argv[0])}${didYouMean(argv[0]!, words)}. Run \`webhooks --help\` for the list.\n`);
    return EXIT.usage;
  }
  if ("group" in found) {
    const actions = COMMANDS.filter((c) => c.name.startsWith(`${found.group} `)).map((c) => c.name.split(" ")[1]);
    const asked = argv[1];
    if (asked === "--help" || asked === "-h") {
      io.stdout(COMMANDS.filter((c) => c.name.startsWith(`${found.group} `)).map((c) => `webhooks ${c.usage}\n  ${c.summary}\n`).join("\n"));
      return EXIT.ok;
    }
    const unknown = asked === undefined ? "missing action" : `unknown action ${JSON.stringify(asked)}${didYouMean(asked, actions as string[])}`;
    io.stderr(`webhooks ${found.group}: ${unknown}; use one of: ${actions.join(", ")}.\n`);
    return EXIT.usage;
  }
  const { command, rest } = found;
  try {
    const inv = parseInvocation(command, rest, io);
    if (inv === "help") {
      io.stdout(commandHelp(command));
      return EXIT.ok;
    }
    const code = await command.run(inv);
    return code ?? EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`webhooks ${command.name}: ${error.message}\nRun \`webhooks ${command.name} --help\` for usage.\n`);
      return EXIT.usage;
    }
    if (error instanceof ApiError || error instanceof OperationError) {
      io.stderr(`webhooks ${command.name}: ${error.message}\n`);
      return EXIT.failed;
    }
    io.stderr(`webhooks ${command.name}: unexpected error: ${(error as Error)?.message ?? String(error)}\n`);
    return EXIT.failed;
  }
}

/** Entry point of bin/webhooks.js. */
export async function main(): Promise<void> {
  const code = await runCli(process.argv.slice(2), {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    env: process.env,
    cwd: process.cwd(),
  });
  process.exitCode = code;
}
