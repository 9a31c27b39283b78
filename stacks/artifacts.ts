/**
 * Where the stacks find the built functions: `<WEBHOOKS_ARTIFACTS_DIR>/<cloud>/<function>/`
 * (default `dist/functions`), each directory zipped by a cdktf `TerraformAsset` at synth time.
 *
 * A missing directory stops the synth before any resource is built. For synth-only checks
 * (comparison, security check) `placeholders: true` substitutes a one-file directory whose
 * handler refuses to run, so a stack synthesized that way is never mistaken for a deployable one.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export type Cloud = "aws" | "azure" | "gcp";
/**
 * `migrate` is the deploy step (migrations and the application role, with owner rights); the others
 * never run DDL. `management` serves the management API and admin page behind each stack's ingress.
 */
export type FunctionName = "ingest" | "processor" | "relay" | "migrate" | "management";
export const FUNCTION_NAMES: readonly FunctionName[] = ["ingest", "processor", "relay", "migrate", "management"];

export class ArtifactsMissingError extends Error {
  override name = "ArtifactsMissingError";
}

export interface ArtifactOptions {
  /** Root of the built functions. Default: `WEBHOOKS_ARTIFACTS_DIR` or `dist/functions`. */
  dir?: string;
  /** Use placeholder directories instead of failing when a function is not built. Default: false. */
  placeholders?: boolean;
}

/** Resolves the function directories of a cloud, or throws naming every missing one. */
export function resolveArtifacts(cloud: Cloud, options: ArtifactOptions = {}): Record<FunctionName, string> {
  const root = resolve(options.dir ?? process.env.WEBHOOKS_ARTIFACTS_DIR ?? "dist/functions");
  const found = {} as Record<FunctionName, string>;
  const missing: string[] = [];
  for (const fn of FUNCTION_NAMES) {
    const dir = join(root, cloud, fn);
    if (existsSync(join(dir, "index.mjs"))) found[fn] = dir;
    else if (options.placeholders) found[fn] = placeholderDir(cloud, fn);
    else missing.push(dir);
  }
  if (missing.length > 0) {
    throw new ArtifactsMissingError(
      `Function artifacts missing for ${cloud}:\n${missing.map((d) => `- ${d}/index.mjs`).join("\n")}\n` +
        "run `npm run build:functions` first (or point WEBHOOKS_ARTIFACTS_DIR at the built functions; " +
        "WEBHOOKS_SYNTH_PLACEHOLDERS=1 synthesizes with placeholder code for checks only).",
    );
  }
  return found;
}

/** Placeholder code: deployable by Terraform, but every invocation fails loudly. */
function placeholderDir(cloud: Cloud, fn: FunctionName): string {
  const dir = join(tmpdir(), "webhooks-placeholder-functions", cloud, fn);
  if (!existsSync(join(dir, "index.mjs"))) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "index.mjs"),
      `export const handler = () => { throw new Error("placeholder ${cloud}/${fn}: run npm run build:functions and synth again"); };\n`,
    );
  }
  return dir;
}
