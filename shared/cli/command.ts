/**
 * The shape of a CLI command and the parsing every command shares: global options
 * (`--url`, `--token`, `--json`, `--help`), `node:util` parseArgs in strict mode, and the exit codes.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { createApiClient, type ApiClient } from "./api.js";
import { didYouMean } from "./suggest.js";

/** Exit codes: 0 done, 1 the operation failed, 2 the command line was wrong. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** The command line is wrong: exit 2 with this message and a pointer to `--help`. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** The operation ran and failed (e.g. some replays refused): exit 1 with this message. */
export class OperationError extends Error {
  override name = "OperationError";
}

type Options = NonNullable<ParseArgsConfig["options"]>;

export interface Io {
  /** Results: a table, or JSON with `--json`. */
  stdout(text: string): void;
  /** Progress, warnings, errors. */
  stderr(text: string): void;
  env: Record<string, string | undefined>;
  /** Working directory for commands that run project scripts. */
  cwd: string;
}

export interface Invocation {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  json: boolean;
  io: Io;
  /** The API client from --url/WEBHOOKS_URL and --token/WEBHOOKS_API_KEY/ADMIN_TOKEN (throws UsageError if no token). */
  api(): ApiClient;
}

export interface Command {
  /** e.g. `dlq list` */
  name: string;
  summary: string;
  /** Usage line after `webhooks `, e.g. `dlq replay <id>... | --all`. */
  usage: string;
  /** Help text below the usage line: arguments, options, examples. */
  help: string;
  options?: Options;
  /** Positional arguments allowed: [min, max]. Default: [0, 0]. */
  positionals?: [number, number];
  /** Needs --url/--token (management API). Default: true. */
  usesApi?: boolean;
  run(inv: Invocation): Promise<number | void>;
}

export const GLOBAL_OPTIONS: Options = {
  url: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
};

export const GLOBAL_HELP = `Global options:
  --url <url>      platform URL (default: $WEBHOOKS_URL, else http://127.0.0.1:$PORT, PORT 8080 if unset)
  --token <token>  an API key (whk_…) or the admin token (default: $WEBHOOKS_API_KEY, else $ADMIN_TOKEN)
  --json           print results as JSON on stdout
  -h, --help       show help for this command`;

export function commandHelp(command: Command): string {
  return `Usage: webhooks ${command.usage}\n\n${command.summary}\n\n${command.help ? `${command.help.trimEnd()}\n\n` : ""}${command.usesApi === false ? GLOBAL_HELP.split("\n").filter((l) => !/--url|--token/.test(l)).join("\n") : GLOBAL_HELP}\n`;
}

/** Parses `args` for `command`; UsageError with the parser's own words when they are wrong. */
export function parseInvocation(command: Command, args: string[], io: Io): Invocation | "help" {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options: { ...GLOBAL_OPTIONS, ...command.options }, allowPositionals: true, strict: true });
  } catch (error) {
    // parseArgs messages are precise ("Unknown option '--x'"); drop its advice about `--` which misleads here.
    const msg = (error as Error).message.replace(/\. To specify a positional argument.*$/s, ".");
    const unknown = /^Unknown option '(--?[^']+)'/.exec(msg)?.[1];
    const known = Object.keys({ ...GLOBAL_OPTIONS, ...command.options }).map((o) => `--${o}`);
    throw new UsageError(unknown ? `Unknown option ${JSON.stringify(unknown)}${didYouMean(unknown, known)}.` : msg);
  }
  const values = parsed.values as Invocation["values"];
  if (values.help) return "help";
  const [min, max] = command.positionals ?? [0, 0];
  const n = parsed.positionals.length;
  if (n < min) throw new UsageError(`Missing argument: webhooks ${command.usage}`);
  if (n > max) throw new UsageError(`Unexpected argument ${JSON.stringify(parsed.positionals[max])}: webhooks ${command.usage}`);

  // PORT as `npm start` reads it, so a platform started with PORT=… is found without --url.
  const url = (values.url as string | undefined) ?? (io.env.WEBHOOKS_URL || `http://127.0.0.1:${io.env.PORT || "8080"}`);
  return {
    values,
    positionals: parsed.positionals,
    json: values.json === true,
    io,
    api() {
      // The first of these that is set is used; the others are named if it is refused.
      const sources = [
        { name: "--token", value: values.token as string | undefined },
        { name: "WEBHOOKS_API_KEY", value: io.env.WEBHOOKS_API_KEY },
        { name: "ADMIN_TOKEN", value: io.env.ADMIN_TOKEN },
      ].filter((s) => s.value);
      const token = sources[0]?.value;
      if (!token) throw new UsageError("No token: pass --token or set ADMIN_TOKEN (the platform prints it at start), or set WEBHOOKS_API_KEY to an API key.");
      try {
        const u = new URL(url);
        if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("not http");
      } catch {
        throw new UsageError(`--url must be an http(s) URL such as http://127.0.0.1:8080; got ${JSON.stringify(url)}.`);
      }
      return createApiClient({ url, token, tokenSource: { name: sources[0]!.name, alsoSet: sources[0]!.name === "--token" ? [] : sources.slice(1).map((s) => s.name) } });
    },
  };
}

/** Reads an integer option within bounds, or the default. */
export function intOption(inv: Invocation, name: string, fallback: number, min: number, max: number): number {
  const raw = inv.values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name} must be an integer from ${min} to ${max}; got ${JSON.stringify(raw)}.`);
  return n;
}
