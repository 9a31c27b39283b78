import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixtureArtifacts } from "./synthFixture.js";

/** A PATH holding only `node`: no terraform, no tofu, no cloud CLI. */
function nodeOnlyPath(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "webhooks-path-")), "bin");
  mkdirSync(dir);
  symlinkSync(process.execPath, join(dir, "node"));
  return dir;
}

function synth(env: Record<string, string>) {
  const outdir = mkdtempSync(join(tmpdir(), "webhooks-cli-out-"));
  const result = spawnSync(process.execPath, ["stacks/synth.mjs"], {
    cwd: join(dirname(new URL(import.meta.url).pathname), "..", ".."),
    env: { PATH: nodeOnlyPath(), HOME: mkdtempSync(join(tmpdir(), "webhooks-home-")), CHECKPOINT_DISABLE: "1", CDKTF_OUTDIR: outdir, ...env },
    encoding: "utf8",
  });
  return { ...result, outdir };
}

describe("npm run synth (stacks/synth.mjs)", () => {
  it("synthesizes all three stacks without terraform, credentials or network", () => {
    const run = synth({ WEBHOOKS_ARTIFACTS_DIR: fixtureArtifacts() });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    for (const stack of ["webhooks-aws", "webhooks-azure", "webhooks-gcp"]) {
      expect(existsSync(join(run.outdir, "stacks", stack, "cdk.tf.json")), stack).toBe(true);
    }
    // It says so, and what comes next (issue 27 item 17: it used to print nothing).
    expect(run.stdout).toContain(`Synthesized webhooks-aws, webhooks-azure, webhooks-gcp into ${join(run.outdir, "stacks")}/<stack>/cdk.tf.json`);
    expect(run.stdout).toContain("npm run preflight -- <aws|azure|gcp>");
  });

  // (Bad settings are covered in-process by config.test.ts; main.ts prints both errors alike.)
  it("stops early with the build command when the functions are not built", () => {
    const run = synth({ WEBHOOKS_ARTIFACTS_DIR: mkdtempSync(join(tmpdir(), "webhooks-nobuild-")) });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("Function artifacts missing for aws");
    expect(run.stderr).toContain("run `npm run build:functions` first");
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(existsSync(join(run.outdir, "stacks"))).toBe(false);
  });
});
