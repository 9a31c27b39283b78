// `npm run test:node22`: the function and wiring tests again, on Node 22, the runtime every
// stack deploys the functions to (this machine's Node may be 20). Node 22 comes from the npm
// registry (`npx -p node@22`); the tests themselves are the same files `vitest run` ran.
import { execFileSync, spawnSync } from "node:child_process";

const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["test/functions", "test/wiring"];
let node;
try {
  node = execFileSync("npx", ["-y", "-p", "node@22", "-c", "command -v node"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim().split("\n").pop();
} catch {
  console.error("test:node22: could not get Node 22 from the npm registry (npx -y -p node@22). Connect to the registry and run again.");
  process.exit(1);
}
const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
if (!version.startsWith("v22.")) {
  console.error(`test:node22: npx gave Node ${version}, not 22.`);
  process.exit(1);
}
console.log(`\n== the function and wiring tests on Node ${version} (${files.join(", ")})\n`);
const run = spawnSync(node, ["node_modules/vitest/vitest.mjs", "run", ...files], { stdio: "inherit" });
process.exit(run.status ?? 1);
