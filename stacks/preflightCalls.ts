/**
 * The preflight's one cloud call: the credentials it found are tried with a single cheap,
 * read-only request before `cdktf deploy` starts, so an expired login or a wrong key is named
 * here rather than minutes into an apply. The cloud's own CLI when it is on PATH (it reads the
 * same login Terraform's provider does), else the SDK this project already depends on:
 *
 * - AWS: `aws sts get-caller-identity`; without the CLI, SQS ListQueues (one result) in the
 *   stack's region through @aws-sdk/client-sqs, a call the deploy needs to be allowed anyway.
 * - Azure: a service principal with a secret (ARM_CLIENT_ID…, what the azurerm provider uses
 *   first): a Resource Manager token through @azure/identity; otherwise the `az login` Terraform
 *   would use: `az account get-access-token` for the subscription.
 * - GCP: `gcloud auth application-default print-access-token` (the Application Default
 *   Credentials the google provider uses).
 *
 * Where neither is available (e.g. Azure managed identity or OIDC without `az`) the check says it
 * was not tried instead of claiming the credentials work.
 */
import { execFile } from "node:child_process";
import type { Cloud } from "./artifacts.js";
import { loadStackConfig, readContext } from "./config.js";
import { onPath } from "./onPath.js";

/** What the checks read: the environment being deployed from, and where the stack's context is. */
export interface CallInput {
  env: Record<string, string | undefined>;
  cdktfJson?: string;
}

export type Env = Record<string, string | undefined>;

export type CredentialCheck =
  | { outcome: "accepted"; what: string }
  | { outcome: "refused"; what: string }
  | { outcome: "not tried"; what: string };

const CALL_TIMEOUT_MS = 60_000;

/** Runs a CLI; resolves with its exit code and output (never rejects). */
function runCli(path: string, args: string[], env: Env): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(path, args, { env: env as NodeJS.ProcessEnv, timeout: CALL_TIMEOUT_MS, maxBuffer: 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) || (error && !stderr ? error.message : "") });
    });
  });
}

/** The line of a CLI's error output that says what went wrong (its last non-empty line, usually). */
const reason = (stderr: string, fallback: string) =>
  stderr.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !/^(WARNING|Traceback|\s*File )/.test(l)).at(-1) ?? fallback;

async function awsCheck(env: Env, region: string): Promise<CredentialCheck> {
  const aws = onPath("aws", env);
  // The stack's region unless the environment names one (the CLI wants a region even for STS).
  const where = env.AWS_REGION || env.AWS_DEFAULT_REGION || region;
  if (aws) {
    const r = await runCli(aws, ["sts", "get-caller-identity", "--region", where, "--output", "json"], env);
    if (r.code !== 0) return { outcome: "refused", what: `\`aws sts get-caller-identity\` failed: ${reason(r.stderr, `exit ${r.code}`)}` };
    try {
      const id = JSON.parse(r.stdout) as { Account?: string; Arn?: string };
      return { outcome: "accepted", what: `AWS credentials accepted (aws sts get-caller-identity: account ${id.Account}, ${id.Arn})` };
    } catch {
      return { outcome: "refused", what: `\`aws sts get-caller-identity\` answered something that is not JSON: ${r.stdout.slice(0, 200)}` };
    }
  }
  const { SQSClient, ListQueuesCommand } = await import("@aws-sdk/client-sqs");
  // Keys and endpoint from the environment being checked; otherwise the SDK's own chain (profile, SSO, …).
  const keys = env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY ? { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, sessionToken: env.AWS_SESSION_TOKEN } : undefined;
  const endpoint = env.AWS_ENDPOINT_URL_SQS || env.AWS_ENDPOINT_URL || undefined;
  const client = new SQSClient({ region: where, maxAttempts: 1, ...(keys ? { credentials: keys } : {}), ...(endpoint ? { endpoint } : {}) });
  try {
    await client.send(new ListQueuesCommand({ MaxResults: 1 }), { abortSignal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    return { outcome: "accepted", what: `AWS credentials accepted (SQS ListQueues in ${where}; no aws CLI on PATH)` };
  } catch (error) {
    return { outcome: "refused", what: `SQS ListQueues in ${where} failed (no aws CLI on PATH, so through the SDK): ${(error as Error).name}: ${(error as Error).message}` };
  } finally {
    client.destroy();
  }
}

async function azureCheck(env: Env): Promise<CredentialCheck> {
  const az = onPath("az", env);
  const subscription = env.ARM_SUBSCRIPTION_ID ? ["--subscription", env.ARM_SUBSCRIPTION_ID] : [];
  const servicePrincipal = env.ARM_CLIENT_ID && env.ARM_TENANT_ID && env.ARM_CLIENT_SECRET;
  if (servicePrincipal) {
    const { ClientSecretCredential } = await import("@azure/identity");
    try {
      await new ClientSecretCredential(env.ARM_TENANT_ID!, env.ARM_CLIENT_ID!, env.ARM_CLIENT_SECRET!).getToken("https://management.azure.com/.default", { abortSignal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
      return { outcome: "accepted", what: `Azure service principal ${env.ARM_CLIENT_ID} accepted (a Resource Manager token through @azure/identity)` };
    } catch (error) {
      return { outcome: "refused", what: `the service principal ARM_CLIENT_ID=${env.ARM_CLIENT_ID} got no Resource Manager token: ${reason((error as Error).message, (error as Error).name)}` };
    }
  }
  if (az && !env.ARM_USE_MSI && !env.ARM_USE_OIDC) {
    const r = await runCli(az, ["account", "get-access-token", ...subscription, "--output", "json"], env);
    if (r.code !== 0) return { outcome: "refused", what: `\`az account get-access-token${subscription.length ? " --subscription …" : ""}\` failed: ${reason(r.stderr, `exit ${r.code}`)} (run \`az login\` again)` };
    const token = (() => {
      try {
        return JSON.parse(r.stdout) as { subscription?: string; tenant?: string };
      } catch {
        return {};
      }
    })();
    return { outcome: "accepted", what: `Azure login accepted (az account get-access-token: subscription ${token.subscription ?? env.ARM_SUBSCRIPTION_ID ?? "?"})` };
  }
  return { outcome: "not tried", what: "Azure credentials not tried: managed identity or OIDC is used where it runs (no call from here reaches it)" };
}

async function gcpCheck(env: Env): Promise<CredentialCheck> {
  const gcloud = onPath("gcloud", env);
  if (!gcloud) return { outcome: "not tried", what: "GCP credentials not tried: no gcloud on PATH" };
  const r = await runCli(gcloud, ["auth", "application-default", "print-access-token"], env);
  if (r.code !== 0) return { outcome: "refused", what: `\`gcloud auth application-default print-access-token\` failed: ${reason(r.stderr, `exit ${r.code}`)} (run \`gcloud auth application-default login\`)` };
  return { outcome: "accepted", what: "GCP Application Default Credentials accepted (gcloud auth application-default print-access-token)" };
}

/** Tries the credentials of `cloud` with one read-only call. */
export async function checkCredentials(cloud: Cloud, input: CallInput): Promise<CredentialCheck> {
  if (cloud === "aws") return awsCheck(input.env, loadStackConfig(readContext(input.cdktfJson ?? "cdktf.json", input.env), input.env).awsRegion);
  if (cloud === "azure") return azureCheck(input.env);
  return gcpCheck(input.env);
}
