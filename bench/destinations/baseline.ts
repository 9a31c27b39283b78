/**
 * The destination senders as they were at BENCH_BASELINE_COMMIT, for bench:destinations' side by
 * side runs (default: the last commit before send coalescing): shared/outbound/destinations/*.ts
 * are read from git and written to a directory under node_modules/.cache (so the SDKs they load
 * resolve from this tree's node_modules), where their imports outside that folder point back at
 * this tree. The relay takes them as its `destinations`: only the senders differ between the two.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, posix, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { createDestinationSenders } from "../../shared/outbound/destinations/senders.js";

/** The last commit before send coalescing (its destinations folder as 2501c22 left it). */
export const BASELINE_COMMIT = process.env.BENCH_BASELINE_COMMIT ?? "2501c2225a627a75e7fb9c1ca68a3b46eafd64d0";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const FOLDER = "shared/outbound/destinations";

export interface BaselineSenders {
  createDestinationSenders: typeof createDestinationSenders;
  remove(): void;
}

export async function loadBaselineSenders(): Promise<BaselineSenders> {
  const cache = join(REPO, "node_modules/.cache");
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, "bench-destinations-baseline-"));
  const files = execFileSync("git", ["-C", REPO, "ls-tree", "--name-only", `${BASELINE_COMMIT}:${FOLDER}`], { encoding: "utf8" }).split("\n").filter((f) => f.endsWith(".ts"));
  for (const file of files) {
    let text = execFileSync("git", ["-C", REPO, "show", `${BASELINE_COMMIT}:${FOLDER}/${file}`], { encoding: "utf8" });
    // Imports leaving the folder go to this tree's files; those within it stay (copied alongside).
    text = text.replace(/from "(\.\.\/[^"]+)"/g, (_, spec: string) => `from "${pathToFileURL(join(REPO, posix.join(FOLDER, spec))).href.replace(/\.js$/, ".ts")}"`);
    writeFileSync(join(dir, file), text);
  }
  const senders = (await import(pathToFileURL(join(dir, "senders.ts")).href)) as { createDestinationSenders: typeof createDestinationSenders };
  return { createDestinationSenders: senders.createDestinationSenders, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
