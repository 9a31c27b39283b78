/**
 * `npm run build:functions`: bundles every cloud function with esbuild into one minified ESM file,
 * plus what its runtime needs, under `dist/functions/<cloud>/<function>/`, ready to zip.
 * Only what a function imports is bundled, so each carries only its own cloud's SDKs.
 */
import { build } from "esbuild";
import { mkdir, readdir, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const CLOUDS = ["aws", "azure", "gcp"] as const;
export const FUNCTIONS = ["ingest", "processor", "relay"] as const;
export type Cloud = (typeof CLOUDS)[number];
export type FunctionName = (typeof FUNCTIONS)[number];

const root = fileURLToPath(new URL("..", import.meta.url));

export interface BuiltFunction {
  cloud: Cloud;
  name: FunctionName;
  dir: string;
  bytes: number;
}

/** Files a runtime needs next to the bundle. */
function runtimeFiles(cloud: Cloud, name: FunctionName): Record<string, string> {
  if (cloud === "azure") {
    return {
      "host.json": JSON.stringify({
        version: "2.0",
        extensionBundle: { id: "Microsoft.Azure.Functions.ExtensionBundle", version: "[4.*, 5.0.0)" },
        logging: { logLevel: { default: "Information" } },
      }, null, 2),
      "package.json": JSON.stringify({ name: `webhooks-${name}`, type: "module", main: "index.mjs", dependencies: {} }, null, 2),
    };
  }
  if (cloud === "gcp") {
    return {
      // Cloud Build's Node.js buildpack runs the Functions Framework named here.
      "package.json": JSON.stringify({
        name: `webhooks-${name}`,
        type: "module",
        main: "index.mjs",
        engines: { node: ">=22" },
        dependencies: { "@google-cloud/functions-framework": "^5.0.0" },
      }, null, 2),
    };
  }
  return {};
}

export async function buildFunctions(outDir = join(root, "dist/functions")): Promise<BuiltFunction[]> {
  const built: BuiltFunction[] = [];
  for (const cloud of CLOUDS) {
    const sources = new Set(await readdir(join(root, "functions", cloud)).catch(() => []));
    for (const name of FUNCTIONS) {
      if (!sources.has(`${name}.ts`)) throw new Error(`functions/${cloud}/${name}.ts is missing: every cloud needs ${FUNCTIONS.join(", ")}.`);
      const dir = join(outDir, cloud, name);
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      await build({
        entryPoints: [join(root, "functions", cloud, `${name}.ts`)],
        outfile: join(dir, "index.mjs"),
        bundle: true,
        minify: true,
        format: "esm",
        platform: "node",
        target: "node22",
        sourcemap: false,
        legalComments: "none",
        // pg's optional native binding is never used; PGlite is for local runs only.
        external: ["pg-native", "@electric-sql/pglite"],
        // Bundled CommonJS dependencies call require(); give ESM output one.
        banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
        logLevel: "warning",
      });
      for (const [file, content] of Object.entries(runtimeFiles(cloud, name))) {
        await writeFile(join(dir, file), content + "\n");
      }
      built.push({ cloud, name, dir, bytes: (await stat(join(dir, "index.mjs"))).size });
    }
  }
  return built;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const built = await buildFunctions();
  for (const f of built) console.log(`${f.cloud}/${f.name}`.padEnd(18), `${(f.bytes / 1024).toFixed(0)} KiB`.padStart(9), f.dir);
}
