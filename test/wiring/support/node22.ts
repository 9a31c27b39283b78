/**
 * Node 22, the cloud functions' runtime, for the wiring tests: this machine's Node is 20, and the
 * npm registry serves Node itself (`npx -p node@22`). Resolved once per test file.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);
let found: Promise<string | undefined> | undefined;

/**
 * The packages that hold Node 22: `node@22` installs its binary with an install script (it adds
 * `node-<os>-<cpu>`), which npm skips under `ignore-scripts`; the per-platform package holds the
 * binary itself, so it is tried next.
 */
const CANDIDATES = ["node@22", `node-${process.platform === "win32" ? "win" : process.platform}-${process.arch}@22`];

/** The path of a Node 22 binary, or undefined when none can be had (no registry, no cache). */
export function node22(): Promise<string | undefined> {
  found ??= (async () => {
    for (const pkg of CANDIDATES) {
      try {
        const { stdout } = await run("npx", ["-y", "-p", pkg, "-c", "command -v node"], { timeout: 180_000 });
        const path = stdout.trim().split("\n").pop()!;
        const { stdout: version } = await run(path, ["--version"]);
        if (version.trim().startsWith("v22.")) return path;
      } catch {
        // the next candidate
      }
    }
    return undefined;
  })();
  return found;
}

/**
 * The skip reason when Node 22 is missing: a loud skip on a workstation, an error under CI=true
 * (CI must run the wiring tests). Undefined when it is there.
 */
export async function skipUnlessNode22(): Promise<string | undefined> {
  if (await node22()) return undefined;
  const reason = `Node 22 is not available (npx -y -p ${CANDIDATES.join(" and -p ")} failed: no npm registry and no cache)`;
  if (process.env.CI && process.env.CI !== "false") throw new Error(`${reason}. CI must run the wiring tests on the functions' runtime.`);
  console.warn(`\n!!! ${reason}: the wiring tests are SKIPPED.\n`);
  return reason;
}
