/**
 * Before `cdktf deploy` on GCP: which of the stack's generated secrets already have a version in
 * Secret Manager. Terraform then writes no new first version for them (stacks/gcp/
 * secretManagerSecrets.ts), so a destroyed version 1 can never be replaced by a new generated
 * value. A secret that does not exist yet (first deploy), or a project whose Secret Manager API is
 * not enabled yet, has none; any other failure stops the deploy, since guessing "none" could
 * overwrite a live key.
 */
import type { StackConfig } from "../config.js";
import type { Exec } from "../postDeploy.js";
import { GENERATED_SECRETS } from "./secretManagerSecrets.js";

/** The Terraform variable `npm run deploy` sets from this answer. */
export const EXISTING_GENERATED_SECRETS_VARIABLE = "TF_VAR_existing_generated_secrets";

export function existingGeneratedSecrets(config: StackConfig, exec: Exec): { names: string[] } | { problem: string } {
  const names: string[] = [];
  for (const name of GENERATED_SECRETS) {
    const secret = `${config.namePrefix}-${name}`;
    const args = ["secrets", "versions", "list", secret, `--project=${config.gcpProject}`, "--format=value(state)"];
    const listed = exec("gcloud", args);
    if (listed.error || listed.status !== 0) {
      const said = (listed.error?.message ?? listed.stderr ?? "").trim();
      if (/NOT_FOUND|not found|SERVICE_DISABLED|has not been used in project/i.test(said)) continue;
      return { problem: `\`gcloud ${args.join(" ")}\` failed: ${said || `exit ${listed.status}`}\nThe deploy must know whether ${secret} has a version before applying (Terraform would otherwise write a new generated value); fix gcloud and run it again.` };
    }
    // A disabled version is still the operator's value; only destroyed ones are gone.
    if (listed.stdout.split("\n").some((state) => /^(ENABLED|DISABLED)$/.test(state.trim()))) names.push(name);
  }
  return { names };
}
