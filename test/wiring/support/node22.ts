/**
 * Node 22, the cloud functions' runtime, for the wiring tests: this machine's Node is 20, and the
 * npm registry serves Node itself (`npx -p node@22`). Resolved once per test file.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);
let found: Promise<string | undefined> | undefined;

/** The path of a Node 22 binary, or undefined when none can be had (no registry, no cache). */
export function node22(): Promise<string | undefined> {
  found ??= (async () => {
    try {
      const { stdout } = await run("npx", ["-y", "-p", "node@22", "-c", "command -v node"], { timeout: 180_000 });
      const path = stdout.trim().split("\n").pop()!;
      const { stdout: version } = await run(path, ["--version"]);
      return version.trim().startsWith("v22.") ? path : undefined;
    } catch {
      return undefined;
    }
  })();
  return found;
}

/**
 * The skip reason when Node 22 is missing: a loud skip on a workstation, an error under CI=true
 * (CI must run the wiring tests). Undefined when it is there.
 */
export async function skipUnlessNode22(): Promise<string | undefined> {
  if (await node22()) return undefined;
  const reason = "Node 22 is not available (npx -y -p node@22 failed: no npm registry and no cache)";
  if (process.env.CI && process.env.CI !== "false") throw new Error(`${reason}. CI must run the wiring tests on the functions' runtime.`);
  console.warn(`\n!!! ${reason}: the wiring tests are SKIPPED.\n`);
  return reason;
}
