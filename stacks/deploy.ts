/**
 * `npm run deploy -- <aws|azure|gcp> [cdktf deploy flags]`: runs the preflight checks, then
 * `cdktf deploy webhooks-<cloud>`. With only OpenTofu installed, cdktf is pointed at `tofu`.
 */
import { spawnSync } from "node:child_process";
import { STACK_NAMES } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { describePreflight, preflight } from "./preflight.js";

const [cloud, ...rest] = process.argv.slice(2);
if (cloud !== "aws" && cloud !== "azure" && cloud !== "gcp") {
  console.error("usage: npm run deploy -- <aws|azure|gcp> [cdktf deploy flags, e.g. --auto-approve]");
  process.exit(2);
}
const result = preflight(cloud as Cloud, { env: process.env });
console.log(describePreflight(cloud, result));
if (!result.ok) process.exit(1);

const env = { ...process.env, CHECKPOINT_DISABLE: "1", ...(result.binary === "tofu" ? { TERRAFORM_BINARY_NAME: "tofu" } : {}) };
const run = spawnSync("npx", ["cdktf", "deploy", STACK_NAMES[cloud], ...rest], { stdio: "inherit", env });
process.exit(run.status ?? 1);
