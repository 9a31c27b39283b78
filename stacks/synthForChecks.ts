/**
 * Synthesizes all three stacks in-process into a temporary directory, with placeholder code
 * where a function is not built: the comparison and the security check read the Terraform,
 * not the functions.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { synthesize, type TerraformJson } from "./app.js";
import type { Cloud } from "./artifacts.js";

export function synthForChecks(): Record<Cloud, TerraformJson> {
  const outdir = mkdtempSync(join(tmpdir(), "webhooks-check-"));
  try {
    return synthesize({ outdir, artifacts: { placeholders: true } });
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
