import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { atLeast, describePreflight, onPath, preflight } from "../../stacks/preflight.js";
import { fixtureArtifacts } from "./synthFixture.js";

let bin: string;
let home: string;
let artifacts: string;
const noContext = join(tmpdir(), "no-such-cdktf.json");
const APP_PASSWORD = "app-role-password-0123456789";

beforeAll(() => {
  const root = mkdtempSync(join(tmpdir(), "webhooks-preflight-"));
  bin = join(root, "bin");
  home = join(root, "home");
  mkdirSync(bin);
  mkdirSync(home);
  artifacts = fixtureArtifacts();
});

/**
 * A stand-in executable on its own PATH directory. `terraform` and `tofu` stand-ins answer
 * `version -json` as Terraform 1.11.4 does (only that field); others exit 0.
 */
function fakeBinary(name: string, script = /^(terraform|tofu)$/.test(name) ? versionScript("1.11.4") : "exit 0"): string {
  const dir = mkdtempSync(join(tmpdir(), "webhooks-bin-"));
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${script}\n`);
  chmodSync(path, 0o755);
  return dir;
}

const versionScript = (version: string) => `echo '{"terraform_version":"${version}","platform":"linux_amd64"}'`;

describe("deploy preflight", () => {
  it("names every missing piece with what to do, and finds nothing on an empty PATH", () => {
    const noBuild = mkdtempSync(join(tmpdir(), "webhooks-nobuild-"));
    const result = preflight("aws", { env: { PATH: bin, WEBHOOKS_ARTIFACTS_DIR: noBuild }, home, cdktfJson: noContext });
    expect(result.ok).toBe(false);
    const message = describePreflight("aws", result);
    expect(message).toContain("no `terraform` or `tofu` on PATH");
    expect(message).toContain("no AWS credentials: set AWS_PROFILE");
    expect(message).toContain("run `npm run build:functions` first");
  });

  it("passes for AWS with terraform, an access key and built functions", () => {
    const env = { PATH: fakeBinary("terraform"), AWS_ACCESS_KEY_ID: "AKIAEXAMPLE", AWS_SECRET_ACCESS_KEY: "x", WEBHOOKS_ARTIFACTS_DIR: artifacts };
    const result = preflight("aws", { env, home, cdktfJson: noContext });
    expect(result.missing).toEqual([]);
    expect(result.binary).toBe("terraform");
    expect(describePreflight("aws", result)).toMatch(/^Ready to deploy aws: terraform/);
  });

  it("accepts OpenTofu alone and reports it, so deploy can point cdktf at it", () => {
    const result = preflight("aws", { env: { PATH: fakeBinary("tofu"), AWS_PROFILE: "dev", WEBHOOKS_ARTIFACTS_DIR: artifacts }, home, cdktfJson: noContext });
    expect(result.ok).toBe(true);
    expect(result.binary).toBe("tofu");
  });

  it("finds AWS shared credentials in the home directory", () => {
    const withAws = mkdtempSync(join(tmpdir(), "webhooks-home-"));
    mkdirSync(join(withAws, ".aws"));
    writeFileSync(join(withAws, ".aws", "credentials"), "[default]\n");
    const result = preflight("aws", { env: { PATH: fakeBinary("terraform"), WEBHOOKS_ARTIFACTS_DIR: artifacts }, home: withAws, cdktfJson: noContext });
    expect(result.ok).toBe(true);
    expect(result.found.join(" ")).toContain(".aws");
  });

  it("asks Azure for a subscription id and the database password, and does not count a partial service principal", () => {
    const env = { PATH: fakeBinary("terraform"), ARM_CLIENT_ID: "id", WEBHOOKS_ARTIFACTS_DIR: artifacts };
    const result = preflight("azure", { env, home, cdktfJson: noContext });
    expect(result.missing).toEqual([
      expect.stringContaining("no Azure credentials: run `az login`"),
      expect.stringContaining("ARM_SUBSCRIPTION_ID is not set"),
      expect.stringContaining("TF_VAR_db_admin_password is not set"),
      expect.stringContaining("TF_VAR_db_app_password is not set"),
    ]);
    const complete = { ...env, ARM_TENANT_ID: "t", ARM_CLIENT_SECRET: "s", ARM_SUBSCRIPTION_ID: "sub", TF_VAR_db_admin_password: "pw", TF_VAR_db_app_password: APP_PASSWORD };
    expect(preflight("azure", { env: complete, home, cdktfJson: noContext }).ok).toBe(true);
  });

  it("wants the functions' role password long and its own", () => {
    const env = { PATH: fakeBinary("terraform"), ARM_CLIENT_ID: "id", ARM_TENANT_ID: "t", ARM_CLIENT_SECRET: "s", ARM_SUBSCRIPTION_ID: "sub", WEBHOOKS_ARTIFACTS_DIR: artifacts, TF_VAR_db_admin_password: APP_PASSWORD };
    expect(preflight("azure", { env: { ...env, TF_VAR_db_app_password: "short" }, home, cdktfJson: noContext }).missing).toEqual([expect.stringContaining("TF_VAR_db_app_password is too short")]);
    expect(preflight("azure", { env: { ...env, TF_VAR_db_app_password: APP_PASSWORD }, home, cdktfJson: noContext }).missing).toEqual([expect.stringContaining("equals TF_VAR_db_admin_password")]);
  });

  it("rejects a GOOGLE_APPLICATION_CREDENTIALS file that does not exist, and the example project", () => {
    const env = { PATH: `${fakeBinary("terraform")}:${fakeBinary("gcloud")}`, GOOGLE_APPLICATION_CREDENTIALS: "/nope/key.json", TF_VAR_db_admin_password: "pw", TF_VAR_db_app_password: APP_PASSWORD, WEBHOOKS_ARTIFACTS_DIR: artifacts };
    const result = preflight("gcp", { env, home, cdktfJson: noContext });
    expect(result.missing).toEqual([expect.stringContaining("no GCP credentials"), expect.stringContaining("no GCP project chosen: set WEBHOOKS_GCP_PROJECT")]);
    const noGcloud = preflight("gcp", { env: { ...env, PATH: fakeBinary("terraform") }, home, cdktfJson: noContext });
    expect(noGcloud.missing).toContainEqual(expect.stringContaining("no `gcloud` on PATH: the deploy calls the migrate function"));
    const adcHome = mkdtempSync(join(tmpdir(), "webhooks-home-"));
    mkdirSync(join(adcHome, ".config", "gcloud"), { recursive: true });
    writeFileSync(join(adcHome, ".config", "gcloud", "application_default_credentials.json"), "{}");
    const ok = preflight("gcp", { env: { ...env, GOOGLE_APPLICATION_CREDENTIALS: undefined, WEBHOOKS_GCP_PROJECT: "my-project-1" }, home: adcHome, cdktfJson: noContext });
    expect(ok.missing).toEqual([]);
  });

  it("refuses to deploy placeholder code", () => {
    const env = { PATH: fakeBinary("terraform"), AWS_PROFILE: "dev", WEBHOOKS_ARTIFACTS_DIR: artifacts, WEBHOOKS_SYNTH_PLACEHOLDERS: "1" };
    expect(preflight("aws", { env, home, cdktfJson: noContext }).missing).toEqual([expect.stringContaining("WEBHOOKS_SYNTH_PLACEHOLDERS=1 is set")]);
  });

  it("refuses a Terraform older than 1.11 (write-only arguments), naming the version it found (issue 27 item 6)", () => {
    const env = { PATH: fakeBinary("terraform", versionScript("1.5.7")), AWS_PROFILE: "dev", WEBHOOKS_ARTIFACTS_DIR: artifacts };
    const result = preflight("aws", { env, home, cdktfJson: noContext });
    expect(result.ok).toBe(false);
    expect(result.missing).toEqual([expect.stringMatching(/^terraform 1\.5\.7 on PATH \(.*\) is too old: .*write-only arguments, which need Terraform ≥ 1\.11/)]);
    expect(describePreflight("aws", result)).not.toContain("Ready to deploy");
    const tofu = preflight("aws", { env: { ...env, PATH: fakeBinary("tofu", versionScript("1.10.6")) }, home, cdktfJson: noContext });
    expect(tofu.missing).toEqual([expect.stringContaining("tofu 1.10.6 on PATH")]);
    expect(tofu.missing[0]).toContain("OpenTofu ≥ 1.11");
    const garbled = preflight("aws", { env: { ...env, PATH: fakeBinary("terraform", "echo 'Terraform v1.11.0'; exit 0") }, home, cdktfJson: noContext });
    expect(garbled.missing).toEqual([expect.stringContaining("could not read the version of")]);
  });

  it("reads the version of the real terraform on this machine", (t) => {
    const real = onPath("terraform", process.env);
    if (!real) {
      console.warn("SKIPPED: no terraform on PATH; the version check ran against stand-ins only");
      return t.skip();
    }
    const result = preflight("aws", { env: { PATH: dirname(real), AWS_PROFILE: "dev", WEBHOOKS_ARTIFACTS_DIR: artifacts }, home, cdktfJson: noContext });
    const version = /^terraform (\d+\.\d+\.\d+)/.exec(result.found[0] ?? "")?.[1];
    expect(version, result.missing.join("; ")).toBeDefined();
    expect(result.ok).toBe(atLeast(version!, [1, 11]));
  });

  it("compares versions numerically", () => {
    expect(atLeast("1.11.0", [1, 11])).toBe(true);
    expect(atLeast("1.9.8", [1, 11])).toBe(false);
    expect(atLeast("1.100.0", [1, 11])).toBe(true);
    expect(atLeast("2.0.0", [1, 11])).toBe(true);
    expect(atLeast("0.12.31", [1, 11])).toBe(false);
    expect(atLeast("1.12.0-beta1", [1, 11])).toBe(true);
  });

  it("looks only at executables on the given PATH", () => {
    const dir = fakeBinary("terraform");
    writeFileSync(join(dir, "tofu"), "not executable");
    expect(onPath("terraform", { PATH: dir })).toBe(join(dir, "terraform"));
    expect(onPath("tofu", { PATH: dir })).toBeUndefined();
  });
});
