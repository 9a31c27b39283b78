// `npm run test:node22`: the function and wiring tests again, on Node 22, the runtime every
// stack deploys the functions to (this machine's Node may be 20). Node 22 comes from the npm
// registry (`npx -p node@22`); the tests themselves are the same files `vitest run` ran.
import { execFileSync, spawnSync } from "node:child_process";

const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["test/functions", "test/wiring"];
// `node@22` installs its binary with an install script, which npm skips under ignore-scripts; the
// per-platform package holds the binary itself (as test/wiring/support/node22.ts does).
const candidates = ["node@22", `node-${process.platform === "win32" ? "win" : process.platform}-${process.arch}@22`];
let node;
let version = "";
for (const pkg of candidates) {
  try {
    node = execFileSync("npx", ["-y", "-p", pkg, "-c", "command -v node"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim().split("\n").pop();
    version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
    if (version.startsWith("v22.")) break;
  } catch {
    // the next candidate
  }
}
if (!version.startsWith("v22.")) {
  console.error(`test:node22: could not get Node 22 from the npm registry (npx -y -p ${candidates.join(" / ")}; got ${version || "nothing"}). Connect to the registry and run again.`);
  process.exit(1);
}
console.log(`\n== the function and wiring tests on Node ${version} (${files.join(", ")})\n`);
const run = spawnSync(node, ["node_modules/vitest/vitest.mjs", "run", ...files], { stdio: "inherit" });
process.exit(run.status ?? 1);
