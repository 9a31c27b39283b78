/**
 * The cdktf app entry (`"app"` in cdktf.json, and `npm run synth`): bundles stacks/main.ts with
 * esbuild into one file, then runs it.
 *
 * Why: loading cdktf and ~90 provider modules one by one through a TypeScript loader cost ~4-5 s
 * of CPU; the same code as one bundle loads in ~1 s, which keeps synth of all three stacks
 * under the 5 s budget. Plain JavaScript, so Node runs it without a loader. The bundle is a
 * build product under node_modules/.cache, rebuilt whenever any file it was built from
 * (ours or a dependency's) is newer than it.
 */
import { buildSync } from "esbuild";
import { existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const outfile = join(root, "node_modules", ".cache", "webhooks-stacks", "main.mjs");
const inputsFile = `${outfile}.inputs.json`;

function upToDate() {
  if (!existsSync(outfile) || !existsSync(inputsFile)) return false;
  const built = statSync(outfile).mtimeMs;
  const inputs = JSON.parse(readFileSync(inputsFile, "utf8"));
  return inputs.every((file) => existsSync(file) && statSync(file).mtimeMs <= built);
}

if (!upToDate()) {
  const partial = `${outfile}.${process.pid}.tmp.mjs`;
  const { metafile } = buildSync({
    entryPoints: [join(root, "stacks", "main.ts")],
    absWorkingDir: root,
    outfile: partial,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    metafile: true,
    // Bundled CommonJS modules call require() for Node built-ins; ESM has none, so provide one.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  });
  // Rename into place so a concurrent synth never runs a half-written bundle.
  renameSync(partial, outfile);
  writeFileSync(inputsFile, JSON.stringify(Object.keys(metafile.inputs).map((file) => resolve(root, file))));
}
await import(pathToFileURL(outfile).href);

// Say what was written and what comes next: a silent success looked like nothing had happened.
// (A synth that failed has exited already, with its reason.)
const stacksDir = join(resolve(root, process.env.CDKTF_OUTDIR ?? "cdktf.out"), "stacks");
const written = existsSync(stacksDir) ? readdirSync(stacksDir).filter((name) => existsSync(join(stacksDir, name, "cdk.tf.json"))).sort() : [];
if (written.length > 0) {
  console.log(`Synthesized ${written.join(", ")} into ${stacksDir}/<stack>/cdk.tf.json.`);
  console.log("Next: npm run preflight -- <aws|azure|gcp>, then npm run deploy -- <aws|azure|gcp> (docs/deploy.md).");
}
