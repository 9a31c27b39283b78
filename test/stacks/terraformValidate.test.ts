/**
 * `terraform validate` on the synthesized AWS stack, against a real provider schema, where this
 * machine has the provider without a network: a local plugin directory (`TF_PLUGIN_DIR`, default
 * /opt/tf-plugins, laid out as `terraform providers mirror` writes it). It catches what the JSON
 * tests cannot: an argument the provider does not have (the write-only `secret_string_wo`), a
 * block where an attribute belongs, a malformed lifecycle. The mirror may hold another version
 * than the one the bindings pin (they are generated from 6.25); the test names the version it
 * validated against, and is skipped, loudly, without terraform or the plugin.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { synthesize } from "../../stacks/app.js";
import { onPath } from "../../stacks/preflight.js";
import { fixtureArtifacts, testConfig } from "./synthFixture.js";

const pluginDir = process.env.TF_PLUGIN_DIR ?? "/opt/tf-plugins";
const awsPlugins = join(pluginDir, "registry.terraform.io/hashicorp/aws");
const terraform = onPath("terraform", process.env);
const version = existsSync(awsPlugins) ? readdirSync(awsPlugins).sort().at(-1) : undefined;
const skip = !terraform ? "no terraform on PATH" : !version ? `no hashicorp/aws provider under ${pluginDir}` : undefined;
if (skip) console.warn(`\n!!! terraform validate of the AWS stack SKIPPED: ${skip}\n`);

describe("the AWS stack against the provider's schema (terraform validate)", () => {
  it.skipIf(skip !== undefined)(`is valid for hashicorp/aws ${version ?? "?"} (management route, write-only secrets, the relay's destination grants)`, () => {
    const outdir = mkdtempSync(join(tmpdir(), "webhooks-validate-"));
    const relayDestinations = ["arn:aws:sqs:eu-west-1:123456789012:orders", "arn:aws:events:eu-west-1:123456789012:event-bus/orders",
      { arn: "arn:aws:sns:eu-west-1:123456789012:audit", kmsKeyArn: "arn:aws:kms:eu-west-1:123456789012:key/0b6e3a8c-1f2d-4e5a-9b7c-3d2e1f0a9b8c" }];
    synthesize({ outdir, clouds: ["aws"], config: testConfig({ alertWebhookUrl: "https://alerts.example.com/hooks", relayDestinations }), artifacts: { dir: fixtureArtifacts() } });
    const stackDir = join(outdir, "stacks", "webhooks-aws");
    const work = mkdtempSync(join(tmpdir(), "webhooks-validate-tf-"));
    const json = JSON.parse(readFileSync(join(stackDir, "cdk.tf.json"), "utf8")) as { terraform: { required_providers: { aws: { version: string } }; backend?: unknown } };
    json.terraform.required_providers.aws.version = version!;
    delete json.terraform.backend;
    writeFileSync(join(work, "main.tf.json"), JSON.stringify(json));
    cpSync(join(stackDir, "assets"), join(work, "assets"), { recursive: true });
    const env = { PATH: process.env.PATH, HOME: work, CHECKPOINT_DISABLE: "1", TF_IN_AUTOMATION: "1" };
    execFileSync(terraform!, ["init", "-backend=false", `-plugin-dir=${pluginDir}`, "-input=false"], { cwd: work, env, stdio: "pipe", timeout: 120_000 });
    const out = execFileSync(terraform!, ["validate", "-json"], { cwd: work, env, encoding: "utf8", timeout: 120_000 });
    const result = JSON.parse(out) as { valid: boolean; error_count: number; diagnostics: { severity: string; summary: string; detail?: string }[] };
    expect(result.diagnostics.filter((d) => d.severity === "error"), out).toEqual([]);
    expect(result.valid).toBe(true);
  }, 180_000);
});
