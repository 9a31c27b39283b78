/**
 * `npm run deploy -- <aws|azure|gcp> [cdktf deploy flags]`: runs the preflight checks, then
 * `cdktf deploy webhooks-<cloud>`, then what Terraform cannot do (stacks/postDeploy.ts). With only OpenTofu installed, cdktf is pointed at `tofu`.
 */
import { spawnSync } from "node:child_process";
import { STACK_NAMES } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { loadStackConfig, readContext } from "./config.js";
import { postDeploy } from "./postDeploy.js";
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
if (run.status !== 0) process.exit(run.status ?? 1);
// The steps Terraform cannot make (GCP's migrate run); see stacks/postDeploy.ts.
const after = await postDeploy(cloud as Cloud, loadStackConfig(readContext("cdktf.json", process.env), process.env));
console.log(after.ok ? `post-deploy: ${after.message}` : `post-deploy step failed: ${after.message}`);
process.exit(after.ok ? 0 : 1);
