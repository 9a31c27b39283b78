/**
 * What `cdktf deploy` needs that synth does not: a Terraform-compatible binary, cloud
 * credentials, the built functions and, for Azure and GCP, the database password variable.
 * Checked up front, from the environment, files and the binary's own version (no network, no
 * cloud call), so a missing piece is named before Terraform starts. The credentials are then
 * tried with one read-only call per cloud (stacks/preflightCalls.ts).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { ArtifactsMissingError, type Cloud, resolveArtifacts } from "./artifacts.js";
import { loadStackConfig, readContext } from "./config.js";
import { onPath } from "./onPath.js";
import { checkCredentials } from "./preflightCalls.js";

export interface PreflightInput {
  env: Record<string, string | undefined>;
  /** Home directory, for the CLIs' credential files. Default: `os.homedir()`. */
  home?: string;
  /** cdktf.json to read the stack context from. Default: `cdktf.json`. */
  cdktfJson?: string;
}

export interface PreflightResult {
  ok: boolean;
  /** Each entry names what is missing and how to provide it. */
  missing: string[];
  /** What was found, for the success message. */
  found: string[];
  /** `terraform` or `tofu`, when one was found. */
  binary?: "terraform" | "tofu";
}

export { onPath } from "./onPath.js";

/** Write-only arguments (`secret_string_wo`, …) arrived in Terraform 1.11 (and OpenTofu 1.11). */
export const MIN_TERRAFORM = [1, 11] as const;

/** `1.11.4` ≥ [1, 11]. Pre-release suffixes (`1.12.0-beta1`) count as their version. */
export function atLeast(version: string, min: readonly number[]): boolean {
  const parts = version.split(/[.-]/).map((p) => Number.parseInt(p, 10));
  for (let i = 0; i < min.length; i++) {
    const v = parts[i] ?? 0;
    if (Number.isNaN(v)) return false;
    if (v !== min[i]) return v > min[i]!;
  }
  return true;
}

/** `terraform version -json` (OpenTofu answers the same shape): the version, or why it could not be read. */
export function binaryVersion(path: string, env: Record<string, string | undefined>): string | { error: string } {
  const run = spawnSync(path, ["version", "-json"], { env: { ...env, CHECKPOINT_DISABLE: "1" }, encoding: "utf8", timeout: 30_000 });
  if (run.error) return { error: run.error.message };
  try {
    const version = (JSON.parse(run.stdout) as { terraform_version?: unknown }).terraform_version;
    if (typeof version === "string" && /^\d+\.\d+/.test(version)) return version;
  } catch {
    // not JSON: said below
  }
  return { error: `exit ${run.status}, no terraform_version in its output${run.stderr ? `: ${run.stderr.trim().split("\n")[0]}` : ""}` };
}

const set = (env: Record<string, string | undefined>, ...names: string[]) => names.every((n) => (env[n] ?? "") !== "");

function awsCredentials(env: Record<string, string | undefined>, home: string): string | undefined {
  if (set(env, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")) return "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY";
  if (set(env, "AWS_PROFILE")) return `AWS_PROFILE=${env.AWS_PROFILE}`;
  if (set(env, "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN")) return "web identity (AWS_ROLE_ARN)";
  if (set(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") || set(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI")) return "container credentials";
  const files = [env.AWS_SHARED_CREDENTIALS_FILE ?? join(home, ".aws", "credentials"), env.AWS_CONFIG_FILE ?? join(home, ".aws", "config")];
  const file = files.find((f) => existsSync(f));
  return file ? `AWS shared config (${file})` : undefined;
}

function azureCredentials(env: Record<string, string | undefined>, home: string): string | undefined {
  if (set(env, "ARM_CLIENT_ID", "ARM_TENANT_ID") && (set(env, "ARM_CLIENT_SECRET") || set(env, "ARM_CLIENT_CERTIFICATE_PATH") || set(env, "ARM_USE_OIDC") || set(env, "ARM_OIDC_TOKEN"))) {
    return "service principal (ARM_CLIENT_ID)";
  }
  if (set(env, "ARM_USE_MSI")) return "managed identity (ARM_USE_MSI)";
  const profile = join(env.AZURE_CONFIG_DIR ?? join(home, ".azure"), "azureProfile.json");
  if (onPath("az", env) && existsSync(profile)) return `az login (${profile})`;
  return undefined;
}

function gcpCredentials(env: Record<string, string | undefined>, home: string): string | undefined {
  if (set(env, "GOOGLE_APPLICATION_CREDENTIALS")) {
    return existsSync(env.GOOGLE_APPLICATION_CREDENTIALS!) ? `GOOGLE_APPLICATION_CREDENTIALS (${env.GOOGLE_APPLICATION_CREDENTIALS})` : undefined;
  }
  if (set(env, "GOOGLE_CREDENTIALS")) return "GOOGLE_CREDENTIALS";
  if (set(env, "GOOGLE_OAUTH_ACCESS_TOKEN")) return "GOOGLE_OAUTH_ACCESS_TOKEN";
  const adc = join(env.CLOUDSDK_CONFIG ?? join(home, ".config", "gcloud"), "application_default_credentials.json");
  return existsSync(adc) ? `gcloud application-default credentials (${adc})` : undefined;
}

const HOW_TO: Record<Cloud, string> = {
  aws: "no AWS credentials: set AWS_PROFILE (after `aws configure` or `aws sso login`) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
  azure: "no Azure credentials: run `az login`, or set ARM_CLIENT_ID, ARM_TENANT_ID and ARM_CLIENT_SECRET (or ARM_USE_OIDC / ARM_USE_MSI)",
  gcp: "no GCP credentials: run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a key file that exists",
};

/** Checks everything `cdktf deploy webhooks-<cloud>` needs; never throws for a missing piece. */
export function preflight(cloud: Cloud, input: PreflightInput): PreflightResult {
  const { env } = input;
  const home = input.home ?? homedir();
  const missing: string[] = [];
  const found: string[] = [];

  const terraform = onPath("terraform", env);
  const tofu = onPath("tofu", env);
  const binary = terraform ? "terraform" : tofu ? "tofu" : undefined;
  if (binary) {
    const version = binaryVersion(terraform ?? tofu!, env);
    if (typeof version !== "string") missing.push(`could not read the version of ${terraform ?? tofu} (\`${binary} version -json\`: ${version.error}); the stacks need ${binary} ≥ ${MIN_TERRAFORM.join(".")}`);
    else if (!atLeast(version, MIN_TERRAFORM)) missing.push(`${binary} ${version} on PATH (${terraform ?? tofu}) is too old: the stacks write their generated secrets through write-only arguments, which need ${binary === "tofu" ? "OpenTofu" : "Terraform"} ≥ ${MIN_TERRAFORM.join(".")}; install a newer one or put it first on PATH`);
    else found.push(`${binary} ${version} (${terraform ?? tofu})`);
  } else missing.push("no `terraform` or `tofu` on PATH: install Terraform ≥ 1.11 or OpenTofu ≥ 1.11 (cdktf deploy runs it; the stacks write their generated secrets through write-only arguments)");

  const credentials = { aws: awsCredentials, azure: azureCredentials, gcp: gcpCredentials }[cloud](env, home);
  if (credentials) found.push(credentials);
  else missing.push(HOW_TO[cloud]);

  if (cloud === "azure" && !set(env, "ARM_SUBSCRIPTION_ID")) {
    missing.push("ARM_SUBSCRIPTION_ID is not set: the azurerm provider (v4) needs the target subscription id (`az account show --query id -o tsv`)");
  }
  if (cloud !== "aws") {
    // Aurora's master password is RDS's own (Secrets Manager) and webhooks_app logs in with IAM tokens there.
    if (!set(env, "TF_VAR_db_admin_password")) {
      missing.push("TF_VAR_db_admin_password is not set: the database owner's password (in the secret store as the admin URL, read by the migrate function only)");
    }
    const app = env.TF_VAR_db_app_password ?? "";
    if (app === "") missing.push("TF_VAR_db_app_password is not set: the password of webhooks_app, the role the functions connect as (at least 16 characters; e.g. `openssl rand -base64 24`)");
    else if (app.length < 16) missing.push("TF_VAR_db_app_password is too short: use at least 16 characters (e.g. `openssl rand -base64 24`)");
    else if (app === env.TF_VAR_db_admin_password) missing.push("TF_VAR_db_app_password equals TF_VAR_db_admin_password: give the functions' role a password of its own");
  }
  if (cloud === "gcp") {
    // The deploy's migrate step calls the migrate function with gcloud's identity token (stacks/postDeploy.ts).
    const gcloud = onPath("gcloud", env);
    if (gcloud) found.push(`gcloud (${gcloud})`);
    else missing.push("no `gcloud` on PATH: the deploy calls the migrate function with it after cdktf deploy (install the Google Cloud CLI)");
    const project = loadStackConfig(readContext(input.cdktfJson ?? "cdktf.json", env), env).gcpProject;
    if (project === "webhooks-example") missing.push("no GCP project chosen: set WEBHOOKS_GCP_PROJECT (or context.webhooks.gcpProject in cdktf.json)");
    else found.push(`GCP project ${project}`);
  }

  if (env.WEBHOOKS_SYNTH_PLACEHOLDERS === "1") {
    missing.push("WEBHOOKS_SYNTH_PLACEHOLDERS=1 is set: it deploys placeholder code; unset it to deploy the real functions");
  }
  try {
    resolveArtifacts(cloud, { dir: env.WEBHOOKS_ARTIFACTS_DIR ?? "dist/functions" });
    found.push("function artifacts");
  } catch (error) {
    if (!(error instanceof ArtifactsMissingError)) throw error;
    missing.push(`function artifacts missing: run \`npm run build:functions\` first (looked in ${env.WEBHOOKS_ARTIFACTS_DIR ?? "dist/functions"}/${cloud})`);
  }
  return { ok: missing.length === 0, missing, found, binary };
}

/**
 * The whole preflight of `npm run deploy`: the offline checks, then (when they found
 * credentials) the one read-only call that tries them (stacks/preflightCalls.ts). A refused call
 * is a missing piece like any other.
 */
export async function deployPreflight(cloud: Cloud, input: PreflightInput): Promise<PreflightResult> {
  const result = preflight(cloud, input);
  if (result.missing.some((m) => m.startsWith(`no ${{ aws: "AWS", azure: "Azure", gcp: "GCP" }[cloud]} credentials`))) return result;
  const check = await checkCredentials(cloud, input);
  if (check.outcome === "refused") return { ...result, ok: false, missing: [...result.missing, `credentials refused: ${check.what}`] };
  return { ...result, found: [...result.found, check.what] };
}

/** The message a user reads. */
export function describePreflight(cloud: Cloud, result: PreflightResult): string {
  if (result.ok) return `Ready to deploy ${cloud}: ${result.found.join("; ")}.`;
  return `Cannot deploy ${cloud} yet; missing:\n${result.missing.map((m) => `- ${m}`).join("\n")}`;
}

// `tsx stacks/preflight.ts <cloud>`: the checks alone.
if (import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1] ?? "").href) {
  const cloud = process.argv[2];
  if (cloud !== "aws" && cloud !== "azure" && cloud !== "gcp") {
    console.error(`usage: npm run preflight -- <aws|azure|gcp>${cloud === undefined ? "" : ` (not ${JSON.stringify(cloud)})`}`);
    process.exit(2);
  }
  const result = await deployPreflight(cloud, { env: process.env });
  console.log(describePreflight(cloud, result));
  process.exitCode = result.ok ? 0 : 1;
}
