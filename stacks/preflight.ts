/**
 * What `cdktf deploy` needs that synth does not: a Terraform-compatible binary, cloud
 * credentials, the built functions and, for Azure and GCP, the database password variable.
 * Checked up front, from the environment and files only (no network, no cloud call), so a
 * missing piece is named before Terraform starts.
 */
import { accessSync, constants, existsSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { ArtifactsMissingError, type Cloud, resolveArtifacts } from "./artifacts.js";
import { loadStackConfig, readContext } from "./config.js";

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

/** Finds an executable on the PATH of `env`. */
export function onPath(name: string, env: Record<string, string | undefined>): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
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
  if (binary) found.push(`${binary} (${terraform ?? tofu})`);
  else missing.push("no `terraform` or `tofu` on PATH: install Terraform ≥ 1.11 or OpenTofu ≥ 1.11 (cdktf deploy runs it; the stacks write their generated secrets through write-only arguments)");

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
    // The deploy's migrate step runs the stack's Cloud Scheduler job (stacks/postDeploy.ts).
    const gcloud = onPath("gcloud", env);
    if (gcloud) found.push(`gcloud (${gcloud})`);
    else missing.push("no `gcloud` on PATH: the deploy runs the migrate job with it after cdktf deploy (install the Google Cloud CLI)");
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

/** The message a user reads. */
export function describePreflight(cloud: Cloud, result: PreflightResult): string {
  if (result.ok) return `Ready to deploy ${cloud}: ${result.found.join("; ")}.`;
  return `Cannot deploy ${cloud} yet; missing:\n${result.missing.map((m) => `- ${m}`).join("\n")}`;
}

// `tsx stacks/preflight.ts <cloud>`: the checks alone.
if (import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1] ?? "").href) {
  const cloud = process.argv[2];
  if (cloud !== "aws" && cloud !== "azure" && cloud !== "gcp") {
    console.error("usage: tsx stacks/preflight.ts <aws|azure|gcp>");
    process.exit(2);
  }
  const result = preflight(cloud, { env: process.env });
  console.log(describePreflight(cloud, result));
  process.exitCode = result.ok ? 0 : 1;
}
