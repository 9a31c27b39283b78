/**
 * `npm run deploy -- <aws|azure|gcp> [cdktf deploy flags]`: runs the preflight checks, then
 * `cdktf deploy webhooks-<cloud>`, then what Terraform cannot do (stacks/postDeploy.ts). With only OpenTofu installed, cdktf is pointed at `tofu`.
 */
import { spawnSync } from "node:child_process";
import { STACK_NAMES } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { loadStackConfig, readContext } from "./config.js";
import { existingGeneratedSecrets, EXISTING_GENERATED_SECRETS_VARIABLE } from "./gcp/existingSecrets.js";
import { defaultExec, postDeploy } from "./postDeploy.js";
import { deployPreflight, describePreflight } from "./preflight.js";

const [cloud, ...rest] = process.argv.slice(2);
if (cloud !== "aws" && cloud !== "azure" && cloud !== "gcp") {
  console.error("usage: npm run deploy -- <aws|azure|gcp> [cdktf deploy flags, e.g. --auto-approve]");
  process.exit(2);
}
const result = await deployPreflight(cloud as Cloud, { env: process.env });
console.log(describePreflight(cloud, result));
if (!result.ok) process.exit(1);

const env: NodeJS.ProcessEnv = { ...process.env, CHECKPOINT_DISABLE: "1", ...(result.binary === "tofu" ? { TERRAFORM_BINARY_NAME: "tofu" } : {}) };
if (cloud === "gcp") {
  // Generated secrets that have a version get no new one from Terraform (stacks/gcp/existingSecrets.ts).
  const existing = existingGeneratedSecrets(loadStackConfig(readContext("cdktf.json", process.env), process.env), defaultExec);
  if ("problem" in existing) {
    console.error(existing.problem);
    process.exit(1);
  }
  env[EXISTING_GENERATED_SECRETS_VARIABLE] = JSON.stringify(existing.names);
  console.log(`generated secrets that already have a version (Terraform leaves them): ${existing.names.join(", ") || "none"}`);
}
const run = spawnSync("npx", ["cdktf", "deploy", STACK_NAMES[cloud], ...rest], { stdio: "inherit", env });
if (run.status !== 0) process.exit(run.status ?? 1);
// The migrate step, judged by the migrate function's answer; see stacks/postDeploy.ts.
const after = await postDeploy(cloud as Cloud, loadStackConfig(readContext("cdktf.json", process.env), process.env));
console.log(after.ok ? `post-deploy: ${after.message}` : `post-deploy step failed: ${after.message}`);
process.exit(after.ok ? 0 : 1);
