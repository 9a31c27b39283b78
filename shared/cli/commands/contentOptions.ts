/**
 * Options that carry content rather than a word: a filter as JSON (`--filter '<json>'`) and a
 * file's text (`--transformation <file>`, `--schema <file>`; `-` reads standard input), checked
 * here so a typo or a missing file is named before anything is sent. The API validates the rest.
 */
import { readFile } from "node:fs/promises";
import { UsageError, type Invocation } from "../command.js";

/** `text` as JSON; a UsageError naming `what` (an option) and what it must be otherwise. */
export function parseJsonText(text: string, what: string, example: string, mustBe = "JSON"): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${what} must be ${mustBe}, e.g. ${example}; ${(error as Error).message}.`);
  }
}

/** `--<option> '<json>'` as a JSON value, or undefined when the option is absent. */
export function jsonOption(inv: Invocation, option: string, example: string): unknown {
  const text = inv.values[option] as string | undefined;
  return text === undefined ? undefined : parseJsonText(text, `--${option}`, example);
}

/** `--filter '<json>'`: a JSON object (docs/filters.md), or undefined when absent. */
export function filterOption(inv: Invocation): Record<string, unknown> | undefined {
  const example = `'{"data.amount": {"$gt": 100}}' (docs/filters.md)`;
  const text = inv.values.filter as string | undefined;
  if (text === undefined) return undefined;
  const parsed = parseJsonText(text, "--filter", example, "a JSON object");
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new UsageError(`--filter must be a JSON object, e.g. ${example}.`);
  return parsed as Record<string, unknown>;
}

/** Standard input, whole (for `-`). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString("utf8");
}

/** The text of `file` (`-`: standard input); a UsageError naming `what` when it cannot be read. */
export async function readText(file: string, what: string): Promise<string> {
  if (file === "-") return readStdin();
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    throw new UsageError(`${what}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); give a file, or - for standard input.`);
  }
}

/** The text of the file `--<option>` names (`-`: standard input), or undefined when absent. */
export async function fileOption(inv: Invocation, option: string): Promise<string | undefined> {
  const file = inv.values[option] as string | undefined;
  return file === undefined ? undefined : readText(file, `--${option}`);
}

/** The text of `--<option>` parsed as JSON (a file of JSON, `-`: standard input), or undefined when absent. */
export async function jsonFileOption(inv: Invocation, option: string): Promise<unknown> {
  const text = await fileOption(inv, option);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--${option}: ${inv.values[option] === "-" ? "standard input" : inv.values[option]} is not JSON (${(error as Error).message}).`);
  }
}

/**
 * `--filter <json>` / `--no-filter` and `--transformation <file or ->` / `--no-transformation` as
 * the subscription fields they set (`null`: removed; `allowRemoval` false on create).
 */
export async function contentFieldsOf(inv: Invocation, allowRemoval: boolean): Promise<{ filter?: Record<string, unknown> | null; transformation?: string | null }> {
  const fields: { filter?: Record<string, unknown> | null; transformation?: string | null } = {};
  if (allowRemoval && inv.values.filter !== undefined && inv.values["no-filter"]) throw new UsageError("Give --filter or --no-filter, not both.");
  if (allowRemoval && inv.values.transformation !== undefined && inv.values["no-transformation"]) throw new UsageError("Give --transformation or --no-transformation, not both.");
  const filter = filterOption(inv);
  if (filter) fields.filter = filter;
  else if (allowRemoval && inv.values["no-filter"]) fields.filter = null;
  const transformation = await fileOption(inv, "transformation");
  if (transformation !== undefined) {
    if (transformation.trim() === "") throw new UsageError(`--transformation: ${inv.values.transformation === "-" ? "standard input" : inv.values.transformation} is empty; give the JavaScript (event) => ({ body, headers?, url? } | null).`);
    fields.transformation = transformation;
  } else if (allowRemoval && inv.values["no-transformation"]) fields.transformation = null;
  return fields;
}

export const CONTENT_HELP = `Content (docs/filters.md, docs/transformations.md):
  --filter <json>        deliver only the events it matches, e.g. '{"data.amount": {"$gt": 100}}'
  --transformation <file>
                         JavaScript (event) => ({ body, headers?, url? } | null) from a file
                         (- reads standard input): rewrites or skips each delivery`;

/** A subscription's filter for a person: its JSON, or that there is none. */
export const describeFilter = (filter: Record<string, unknown> | null | undefined): string | undefined =>
  filter === undefined ? undefined : filter === null ? "none (every event of its types)" : JSON.stringify(filter);

/** A subscription's transformation for a person: its size, or that there is none (the source is in --json). */
export const describeTransformation = (source: string | null | undefined): string | undefined =>
  source === undefined ? undefined : source === null ? "none" : `${source.trimEnd().split("\n").length} line(s) (the source: --json)`;
