/**
 * A stack synthesized from the real function bundles, as `npm run build:functions && cdktf synth`
 * would make it: the wiring tests start exactly those bundles with exactly the settings the stack
 * gives them. Built once per test file into a temp directory (about 3 s).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildFunctions } from "../../../functions/build.js";
import { synthesize, type TerraformJson } from "../../../stacks/app.js";
import type { Cloud } from "../../../stacks/artifacts.js";
import { testConfig } from "../../stacks/synthFixture.js";

/** The handler module bundled into these builds: the one the deploy guides' step 3 names. */
export const BUNDLED_HANDLERS = "examples/orders/handlers.ts";

let built: Promise<string> | undefined;
const root = fileURLToPath(new URL("../../..", import.meta.url));

/** Where the real bundles of this test file's build are: `<dir>/<cloud>/<function>/index.mjs`. */
export function builtArtifacts(): Promise<string> {
  built ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "wiring-functions-"));
    // With the example order domain bundled, as `INBOUND_HANDLERS=examples/orders/handlers.ts npm run build:functions` does.
    await buildFunctions(dir, { inboundHandlers: join(root, BUNDLED_HANDLERS) });
    return dir;
  })();
  return built;
}

export interface BuiltStack {
  json: TerraformJson;
  /** Root of the bundles the stack was synthesized with. */
  artifactsDir: string;
  /** `<artifactsDir>/<cloud>/<fn>`: the directory a function resource's zip was made from. */
  bundleDir(fn: string): string;
}

/** One cloud's stack with the tests' config (synthFixture's TEST_OVERRIDES, plus `extra`), from the real bundles. */
export async function synthBuilt(cloud: Cloud, extra: Record<string, unknown> = {}): Promise<BuiltStack> {
  const artifactsDir = await builtArtifacts();
  const outdir = mkdtempSync(join(tmpdir(), "wiring-synth-"));
  const json = synthesize({ outdir, clouds: [cloud], config: testConfig(extra), artifacts: { dir: artifactsDir } })[cloud];
  return { json, artifactsDir, bundleDir: (fn) => join(artifactsDir, cloud, fn) };
}
