/**
 * Issue 27 item 6: the preflight tries the credentials it finds with one read-only call, so
 * "Ready to deploy" is not said of credentials nobody tried. Real where it can be here: the AWS
 * CLI and the AWS SDK against moto (STS and SQS), the real gcloud refusing a broken Application
 * Default Credentials file. No Azure endpoint runs here: `az` is a stand-in script (named so
 * below) that answers as `az account get-access-token` does; the service-principal path
 * (@azure/identity against login.microsoftonline.com) is not exercised by these tests.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { deployPreflight, describePreflight, onPath } from "../../stacks/preflight.js";
import { checkCredentials } from "../../stacks/preflightCalls.js";
import { MOTO_URL, motoAvailable } from "../support/emulators.js";
import { fixtureArtifacts } from "./synthFixture.js";

const noContext = join(tmpdir(), "no-such-cdktf.json");
const APP_PASSWORD = "app-role-password-0123456789";
let artifacts: string;
let motoUp = false;
const realAws = onPath("aws", process.env);
const realGcloud = onPath("gcloud", process.env);

beforeAll(async () => {
  artifacts = fixtureArtifacts();
  motoUp = await motoAvailable();
  if (!motoUp && process.env.CI && process.env.CI !== "false") throw new Error(`moto_server is not answering at ${MOTO_URL}: CI must run the preflight's AWS calls against it`);
});

/** A directory holding stand-in executables, each a shell script. */
function standIns(scripts: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "webhooks-standin-"));
  for (const [name, body] of Object.entries(scripts)) {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}
const TERRAFORM = `echo '{"terraform_version":"1.11.4"}'`;
/** PATH with a stand-in terraform and, when given, other directories after it. */
const pathWith = (...dirs: string[]) => [standIns({ terraform: TERRAFORM }), ...dirs].join(delimiter);
/** This machine's PATH behind the stand-in terraform: the real CLI as a user's shell finds it (a pyenv shim needs bash and pyenv). */
const machinePath = () => pathWith(process.env.PATH ?? "");
const motoKeys = { AWS_ACCESS_KEY_ID: "testing", AWS_SECRET_ACCESS_KEY: "testing", AWS_DEFAULT_REGION: "eu-west-1" };

function skipWithout(t: { skip(): void }, what: string, present: unknown): boolean {
  if (present) return false;
  if (process.env.CI && process.env.CI !== "false" && what === "moto_server") throw new Error("CI must run this test against moto_server");
  console.warn(`SKIPPED: ${what} is not available here; this credential call was not exercised`);
  t.skip();
  return true;
}

describe("the preflight's one credential call per cloud", () => {
  it("AWS, with the aws CLI: sts get-caller-identity answers, and the verdict names the account", async (t) => {
    if (skipWithout(t, "the aws CLI", realAws) || skipWithout(t, "moto_server", motoUp)) return;
    const env = { PATH: machinePath(), HOME: process.env.HOME, ...motoKeys, AWS_ENDPOINT_URL: MOTO_URL, WEBHOOKS_ARTIFACTS_DIR: artifacts };
    const result = await deployPreflight("aws", { env, cdktfJson: noContext });
    expect(result.missing).toEqual([]);
    expect(describePreflight("aws", result)).toMatch(/^Ready to deploy aws: .*AWS credentials accepted \(aws sts get-caller-identity: account 123456789012, arn:aws:sts::123456789012:user\/moto\)/);
  }, 90_000);

  it("AWS, with the aws CLI: an endpoint that does not answer is no 'Ready to deploy'", async (t) => {
    if (skipWithout(t, "the aws CLI", realAws)) return;
    const env = { PATH: machinePath(), HOME: process.env.HOME, ...motoKeys, AWS_ENDPOINT_URL: "http://127.0.0.1:9", AWS_MAX_ATTEMPTS: "1", WEBHOOKS_ARTIFACTS_DIR: artifacts };
    const result = await deployPreflight("aws", { env, cdktfJson: noContext });
    expect(result.ok).toBe(false);
    expect(result.missing).toEqual([expect.stringMatching(/^credentials refused: `aws sts get-caller-identity` failed: Could not connect to the endpoint URL/)]);
  }, 90_000);

  it("AWS, with a key AWS refuses: the CLI's own words (a stand-in aws answering as STS does for a bad key)", async () => {
    const aws = standIns({ aws: `echo 'An error occurred (InvalidClientTokenId) when calling the GetCallerIdentity operation: The security token included in the request is invalid.' >&2; exit 254` });
    const env = { PATH: pathWith(aws), AWS_ACCESS_KEY_ID: "AKIAEXAMPLE", AWS_SECRET_ACCESS_KEY: "wrong", WEBHOOKS_ARTIFACTS_DIR: artifacts };
    const result = await deployPreflight("aws", { env, cdktfJson: noContext });
    expect(result.missing).toEqual(["credentials refused: `aws sts get-caller-identity` failed: An error occurred (InvalidClientTokenId) when calling the GetCallerIdentity operation: The security token included in the request is invalid."]);
    expect(describePreflight("aws", result)).toMatch(/^Cannot deploy aws yet/);
  });

  it("AWS, without the CLI: the SDK lists one SQS queue in the stack's region instead", async (t) => {
    if (skipWithout(t, "moto_server", motoUp)) return;
    const env = { PATH: pathWith(), ...motoKeys, AWS_DEFAULT_REGION: "", AWS_ENDPOINT_URL: MOTO_URL, WEBHOOKS_ARTIFACTS_DIR: artifacts };
    expect(await checkCredentials("aws", { env, cdktfJson: noContext })).toEqual({ outcome: "accepted", what: "AWS credentials accepted (SQS ListQueues in eu-west-1; no aws CLI on PATH)" });
    const down = await checkCredentials("aws", { env: { ...env, AWS_ENDPOINT_URL: "http://127.0.0.1:9" }, cdktfJson: noContext });
    expect(down.outcome).toBe("refused");
    expect(down.what).toMatch(/^SQS ListQueues in eu-west-1 failed \(no aws CLI on PATH, so through the SDK\): /);
  }, 90_000);

  it("GCP: the real gcloud refuses Application Default Credentials it cannot use, and the preflight says so", async (t) => {
    if (skipWithout(t, "the gcloud CLI", realGcloud)) return;
    const config = mkdtempSync(join(tmpdir(), "webhooks-gcloud-"));
    writeFileSync(join(config, "application_default_credentials.json"), "{}");
    const env = { PATH: machinePath(), HOME: tmpdir(), CLOUDSDK_CONFIG: config, WEBHOOKS_GCP_PROJECT: "my-project-1", TF_VAR_db_admin_password: "pw", TF_VAR_db_app_password: APP_PASSWORD, WEBHOOKS_ARTIFACTS_DIR: artifacts };
    const result = await deployPreflight("gcp", { env, cdktfJson: noContext });
    expect(result.ok).toBe(false);
    expect(result.missing).toEqual([expect.stringMatching(/^credentials refused: `gcloud auth application-default print-access-token` failed: .*application_default_credentials\.json.*\(run `gcloud auth application-default login`\)$/)]);
  }, 90_000);

  it("GCP: credentials gcloud can use (a stand-in gcloud printing a token) are reported as tried", async () => {
    const gcloud = standIns({ gcloud: `[ "$1 $2 $3" = "auth application-default print-access-token" ] && echo ya29.standin && exit 0; exit 3` });
    const check = await checkCredentials("gcp", { env: { PATH: gcloud }, cdktfJson: noContext });
    expect(check).toEqual({ outcome: "accepted", what: "GCP Application Default Credentials accepted (gcloud auth application-default print-access-token)" });
  });

  it("Azure: an expired az login is named with what to do (a stand-in az answering as az does)", async () => {
    const home = mkdtempSync(join(tmpdir(), "webhooks-home-"));
    mkdirSync(join(home, ".azure"));
    writeFileSync(join(home, ".azure", "azureProfile.json"), "{}");
    const expired = standIns({ az: `echo "ERROR: AADSTS700082: The refresh token has expired due to inactivity. Run 'az login' to setup account." >&2; exit 1` });
    const env = { PATH: pathWith(expired), ARM_SUBSCRIPTION_ID: "sub-1", TF_VAR_db_admin_password: "pw", TF_VAR_db_app_password: APP_PASSWORD, WEBHOOKS_ARTIFACTS_DIR: artifacts };
    const result = await deployPreflight("azure", { env, home, cdktfJson: noContext });
    expect(result.missing).toEqual([expect.stringMatching(/^credentials refused: `az account get-access-token --subscription …` failed: ERROR: AADSTS700082: The refresh token has expired.*\(run `az login` again\)$/)]);

    // The same, with a login az accepts: the subscription it answered for is named.
    const valid = standIns({ az: `[ "$1 $2 $3 $4" = "account get-access-token --subscription sub-1" ] && echo '{"accessToken":"x","subscription":"sub-1","tenant":"t"}' && exit 0; exit 3` });
    const ok = await deployPreflight("azure", { env: { ...env, PATH: pathWith(valid) }, home, cdktfJson: noContext });
    expect(ok.missing).toEqual([]);
    expect(ok.found).toContain("Azure login accepted (az account get-access-token: subscription sub-1)");
  });

  it("says when it could not try: Azure managed identity is only usable where it runs", async () => {
    expect(await checkCredentials("azure", { env: { PATH: pathWith(), ARM_USE_MSI: "true" }, cdktfJson: noContext })).toEqual({
      outcome: "not tried",
      what: "Azure credentials not tried: managed identity or OIDC is used where it runs (no call from here reaches it)",
    });
  });

  it("makes no call when the offline checks found no credentials at all", async () => {
    const never = standIns({ aws: "echo called > /dev/stderr; exit 99" });
    const result = await deployPreflight("aws", { env: { PATH: pathWith(never), WEBHOOKS_ARTIFACTS_DIR: artifacts }, home: mkdtempSync(join(tmpdir(), "webhooks-home-")), cdktfJson: noContext });
    expect(result.missing).toEqual([expect.stringContaining("no AWS credentials")]);
  });
});
