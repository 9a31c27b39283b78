/**
 * The values the stacks generate at their first apply (the admin token, ENCRYPTION_KEYS:
 * stacks/generatedSecrets.ts), for the wiring tests' simulated secret stores: the synthesized
 * expression (`${sha256("${uuid()}…")}`) evaluated by `terraform console` (or `tofu console`), as
 * the apply evaluates it, so the function is handed what a deployment would hold. Without either
 * binary on PATH the expression is evaluated here for the few functions the stacks use (uuid,
 * sha256, base64sha256, formatdate of timestamp), which Terraform documents; an expression using
 * anything else fails the test instead of being guessed.
 */
import { execFileSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onPath } from "../../../stacks/preflight.js";

/** The JSON string as an HCL template: the same text between quotes (the nested quotes are HCL's too). */
function consoleInput(synthesized: string): string {
  if (/[\n\\]/.test(synthesized)) throw new Error(`generatedValue: ${synthesized} is not a one-line template`);
  return `"${synthesized}"`;
}

function viaConsole(binary: string, synthesized: string): string {
  const dir = mkdtempSync(join(tmpdir(), "wiring-tf-console-"));
  const out = execFileSync(binary, ["console"], { cwd: dir, input: `${consoleInput(synthesized)}\n`, encoding: "utf8", env: { PATH: process.env.PATH, HOME: dir, TF_IN_AUTOMATION: "1", CHECKPOINT_DISABLE: "1" }, timeout: 60_000 });
  const line = out.trim().split("\n").pop()!;
  return JSON.parse(line) as string;
}

/** The same functions, for a machine without Terraform: only what the stacks use. */
function locally(synthesized: string): string {
  const uuids = (text: string) => text.replace(/\$\{uuid\(\)\}/g, () => randomUUID());
  let out = synthesized.replace(/\$\{formatdate\("YYYYMMDD", timestamp\(\)\)\}/g, () => new Date().toISOString().slice(0, 10).replace(/-/g, ""));
  out = out.replace(/\$\{sha256\("((?:\$\{uuid\(\)\})+)"\)\}/g, (_, inner: string) => createHash("sha256").update(uuids(inner)).digest("hex"));
  out = out.replace(/\$\{base64sha256\("((?:\$\{uuid\(\)\})+)"\)\}/g, (_, inner: string) => createHash("sha256").update(uuids(inner)).digest("base64"));
  if (out.includes("${")) throw new Error(`The wiring test cannot evaluate ${synthesized} without terraform or tofu on PATH.`);
  return out;
}

/** What Terraform would write for this write-only argument (`env`'s PATH decides whether Terraform or OpenTofu evaluates it). */
export function generatedValue(synthesized: string, env: Record<string, string | undefined> = process.env): string {
  const binary = onPath("terraform", env) ? "terraform" : onPath("tofu", env) ? "tofu" : undefined;
  return binary ? viaConsole(binary, synthesized) : locally(synthesized);
}
