/**
 * Synthesizes stacks for tests: fixture function artifacts (a tiny index.mjs per function) in
 * a temp directory, a temp cdktf outdir, and a config with non-default values so the tests can
 * see a configured value reach the right attribute.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { synthesize, type TerraformJson } from "../../stacks/app.js";
import { FUNCTION_NAMES, type Cloud } from "../../stacks/artifacts.js";
import { loadStackConfig, type StackConfig } from "../../stacks/config.js";

export const TEST_OVERRIDES = {
  namePrefix: "hooktest",
  maxDeliveryAttempts: 7,
  processorConcurrency: 3,
  processorBatchSize: 4,
  processorTimeoutSeconds: 45,
  queueRetentionDays: 3,
  deadLetterRetentionDays: 10,
  logRetentionDays: 14,
  backupRetentionDays: 9,
  gcpProject: "hooks-test-project",
} as const;

export function testConfig(extra: Record<string, unknown> = {}): StackConfig {
  return loadStackConfig({ ...TEST_OVERRIDES, ...extra }, {});
}

/** A directory laid out like `npm run build:functions` output, with fixture files. */
export function fixtureArtifacts(): string {
  const root = mkdtempSync(join(tmpdir(), "webhooks-artifacts-"));
  for (const cloud of ["aws", "azure", "gcp"]) {
    for (const fn of FUNCTION_NAMES) {
      const dir = join(root, cloud, fn);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "index.mjs"), `export const handler = async () => "${cloud}/${fn} fixture";\n`);
      if (cloud !== "aws") writeFileSync(join(dir, "package.json"), `{"type":"module","main":"index.mjs"}\n`);
    }
  }
  return root;
}

/** Synthesizes one cloud's stack with the test config (plus `extra`) and returns its JSON. */
export function synthStack(cloud: Cloud, extra: Record<string, unknown> = {}): TerraformJson {
  const outdir = mkdtempSync(join(tmpdir(), "webhooks-synth-"));
  return synthesize({ outdir, clouds: [cloud], config: testConfig(extra), artifacts: { dir: fixtureArtifacts() } })[cloud];
}

/** All three stacks from one App (one synth pass), for the checks that read every cloud. */
export function synthAll(extra: Record<string, unknown> = {}): Record<Cloud, TerraformJson> {
  const outdir = mkdtempSync(join(tmpdir(), "webhooks-synth-"));
  return synthesize({ outdir, config: testConfig(extra), artifacts: { dir: fixtureArtifacts() } });
}
