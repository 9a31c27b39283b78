/**
 * `npm run build:functions`: bundles every cloud function with esbuild into one minified ESM file,
 * plus what its runtime needs, under `dist/functions/<cloud>/<function>/`, ready to zip.
 * Only what a function imports is bundled, so each carries only its own cloud's SDKs.
 */
import { build, type Metafile, type Plugin } from "esbuild";
import { cp, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ADMIN_FILES } from "../shared/admin/assets.js";
import { PORTAL_FILES } from "../shared/portal/assets.js";

export const CLOUDS = ["aws", "azure", "gcp"] as const;
/** `migrate` runs once per deploy with the database owner's rights (shared/cloud/prepareDatabase.ts). */
export const FUNCTIONS = ["ingest", "processor", "relay", "migrate", "management"] as const;
export type Cloud = (typeof CLOUDS)[number];
export type FunctionName = (typeof FUNCTIONS)[number];

const root = fileURLToPath(new URL("..", import.meta.url));

export interface BuiltFunction {
  cloud: Cloud;
  name: FunctionName;
  dir: string;
  /** All JavaScript of the function (index.mjs and its chunks): what is zipped. */
  bytes: number;
  /** What importing index.mjs loads: the entry and the chunks it imports statically. */
  loadedBytes: number;
}

function outputSizes(metafile: Metafile): { bytes: number; loadedBytes: number } {
  const outputs = metafile.outputs;
  const bytes = Object.values(outputs).reduce((sum, o) => sum + o.bytes, 0);
  // Not the first output with an `entryPoint`: with splitting, dynamically imported modules have one too.
  const entry = Object.keys(outputs).find((file) => /(^|[\\/])index\.mjs$/.test(file))!;
  const loaded = new Set<string>();
  const visit = (file: string) => {
    if (loaded.has(file) || !outputs[file]) return;
    loaded.add(file);
    for (const i of outputs[file]!.imports) if (i.kind === "import-statement" && !i.external) visit(i.path);
  };
  visit(entry);
  return { bytes, loadedBytes: [...loaded].reduce((sum, file) => sum + outputs[file]!.bytes, 0) };
}

/** Files a runtime needs next to the bundle. */
function runtimeFiles(cloud: Cloud, name: FunctionName, dependencies: Record<string, string>): Record<string, string> {
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
      // Cloud Build's Node.js buildpack installs these dependencies and runs the Functions
      // Framework named here, which loads index.mjs: the bundle must register with that copy of
      // the framework, so the framework is never bundled.
      "package.json": JSON.stringify({
        name: `webhooks-${name}`,
        type: "module",
        main: "index.mjs",
        engines: { node: ">=22" },
        dependencies,
      }, null, 2),
    };
  }
  return {};
}

/**
 * On GCP the buildpack runs `npm install` on the function's package.json for the Functions
 * Framework (the bundle must register with that copy), so the framework alone stays external.
 * The Pub/Sub and Cloud Storage clients are bundled like everything else (chunks loaded on first
 * use), so the bundle size is what deploys.
 */
const GCP_DEPENDENCIES: Record<string, string> = {
  "@google-cloud/functions-framework": "^5.0.5",
};

/**
 * Size trims, each safe for what the functions call:
 * - zod's classic `z` re-exports every locale (~300 KiB minified); the functions only use the
 *   default English messages, so `z.locales` keeps `en` alone.
 * - undici: the outbound transport uses only `Agent` and `buildConnector`; undici's index pulls
 *   in fetch, WebSocket, caches and mocks besides (~350 KiB), so those two come from their files.
 * - @google-cloud/pubsub's generated `protos` classes, which nothing bundled uses (below);
 * - our own modules have no import-time side effects, so a module none of whose exports a
 *   function uses is dropped (Azure's and GCP's `handlers.ts` hold all three handlers).
 */
const MIGRATIONS_URL = JSON.stringify("../sql/migrations/");

const trims: Plugin = {
  name: "trims",
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${join("node_modules", "zod")}`) ? { path: "zod-locales-en", namespace: "trims" } : undefined);
    // @google-cloud/pubsub's index re-exports `protos`, its generated message classes (~680 KiB
    // minified), for callers that build protobuf objects themselves; the clients encode from
    // protos.json, and our code never reads `protos`: it resolves to a module saying so.
    b.onResolve({ filter: /^\.\.\/protos\/protos$/ }, (args) =>
      /@google-cloud[\\/]pubsub[\\/]build[\\/]src[\\/]index\.js$/.test(args.importer) ? { path: "pubsub-protos-stub", namespace: "trims" } : undefined);
    b.onLoad({ filter: /^pubsub-protos-stub$/, namespace: "trims" }, () => ({
      contents: `module.exports = new Proxy({}, { get(_, key) { if (typeof key === "symbol" || key === "__esModule" || key === "then") return undefined; throw new Error("@google-cloud/pubsub's protos are not bundled in the functions (functions/build.ts)"); } });`,
      loader: "js",
    }));
    // Without side effects: a function that imports transport.ts only for a helper (management's
    // listeners.ts: classifyStatus, DEFAULT_USER_AGENT) and never makes a transport then carries no
    // undici (~280 KiB at import, llhttp's WebAssembly included); CommonJS files count as having side
    // effects, so esbuild would otherwise keep every require of this module wherever transport.ts is.
    b.onResolve({ filter: /^undici$/ }, (args) =>
      args.importer.startsWith(join(root, "shared")) ? { path: "undici-agent", namespace: "trims", sideEffects: false } : undefined);
    b.onLoad({ filter: /^zod-locales-en$/, namespace: "trims" }, () => ({
      contents: `export { default as en } from ${JSON.stringify(join(root, "node_modules/zod/v4/locales/en.js"))};`,
      resolveDir: root,
    }));
    b.onLoad({ filter: /^undici-agent$/, namespace: "trims" }, () => ({
      contents: [
        `import Agent from ${JSON.stringify(join(root, "node_modules/undici/lib/dispatcher/agent.js"))};`,
        `import buildConnector from ${JSON.stringify(join(root, "node_modules/undici/lib/core/connect.js"))};`,
        "export { Agent, buildConnector };",
      ].join("\n"),
      resolveDir: root,
    }));
    // migrate.ts reads the SQL files relative to itself (`../sql/migrations/` from shared/db/); in
    // a bundle they sit beside the output file that holds it, copied there by buildFunctions.
    b.onLoad({ filter: /shared[\\/]db[\\/]migrate\.ts$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      if (!source.includes(MIGRATIONS_URL)) throw new Error(`${args.path} no longer reads ${MIGRATIONS_URL}; update the bundling of migrations in functions/build.ts.`);
      return { contents: source.replace(MIGRATIONS_URL, JSON.stringify("./sql/migrations/")), loader: "ts" };
    });
    // The admin page's and the customer portal's files are read from shared/admin/ and
    // shared/portal/ locally; a bundle has no such folders, so the management function carries
    // their text (only it reaches assetFiles.ts).
    b.onLoad({ filter: /shared[\\/](admin|portal)[\\/]assetFiles\.ts$/ }, async (args) => {
      const files: Record<string, string> = {};
      const names = /[\\/]portal[\\/]assetFiles\.ts$/.test(args.path) ? PORTAL_FILES : ADMIN_FILES;
      for (const name of Object.keys(names)) files[name] = await readFile(join(dirname(args.path), name), "utf8");
      return {
        contents: `const FILES = ${JSON.stringify(files)};\nexport async function readAssetFile(name) { if (!Object.hasOwn(FILES, name)) throw new Error("admin file " + name + " is not in the bundle"); return FILES[name]; }`,
        loader: "js",
      };
    });
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (!args.importer.startsWith(join(root, "shared")) && !args.importer.startsWith(join(root, "functions"))) return undefined;
      if (args.importer.includes("node_modules")) return undefined;
      const path = join(args.resolveDir, args.path.replace(/\.js$/, ".ts"));
      return existsSync(path) ? { path, sideEffects: false } : undefined;
    });
  },
};

/**
 * Azure trims:
 * - the functions always hand the Service Bus adapter a credential (`ManagedIdentityCredential`,
 *   functions/azure/connections.ts, which imports it by name so the rest of `@azure/identity` is
 *   tree-shaken), so the adapter's `DefaultAzureCredential` fallback (a namespace import of
 *   `@azure/identity`: every credential, ~330 KiB with MSAL) is never reached there: in Azure
 *   bundles that one import resolves to a module saying so;
 * - `@azure/service-bus` is narrowed to the `ServiceBusClient` the adapter uses.
 */
const azureTrims: Plugin = {
  name: "azure-trims",
  setup(b) {
    b.onResolve({ filter: /^@azure\/identity$/ }, (args) =>
      /shared[\\/]queue[\\/]serviceBus\.ts$/.test(args.importer) ? { path: "azure-identity-stub", namespace: "trims" } : undefined);
    b.onLoad({ filter: /^azure-identity-stub$/, namespace: "trims" }, () => ({
      contents: `export class DefaultAzureCredential { constructor() { throw new Error("DefaultAzureCredential is not bundled in the Azure functions: pass a credential (functions/azure/connections.ts does)."); } }`,
      loader: "js",
    }));
    // The adapter imports the SDK as a namespace (`await import(...)`), which keeps every export,
    // the ATOM management client and its XML parser included (~100 KiB); it uses ServiceBusClient only.
    b.onResolve({ filter: /^@azure\/service-bus$/ }, (args) =>
      /shared[\\/]queue[\\/]serviceBus\.ts$/.test(args.importer) ? { path: args.importer, namespace: "service-bus-client" } : undefined);
    b.onLoad({ filter: /.*/, namespace: "service-bus-client" }, async (args) => {
      const used = new Set((await readFile(args.path, "utf8")).match(/\bsdk\.\w+/g));
      if ([...used].some((u) => u !== "sdk.ServiceBusClient")) throw new Error(`${args.path} uses ${[...used].join(", ")} of @azure/service-bus; functions/build.ts re-exports ServiceBusClient only: update it.`);
      return { contents: `export { ServiceBusClient } from ${JSON.stringify(join(root, "node_modules/@azure/service-bus/dist-esm/src/serviceBusClient.js"))};`, resolveDir: root };
    });
  },
};

/**
 * Destinations beyond HTTP (issue 31): every cloud's relay carries every kind, since a customer's
 * queue may be in any cloud (an AWS deployment delivering to a customer's Pub/Sub topic with the
 * customer's key), each kind's SDK a chunk loaded on its first destination (senders.ts), never at
 * cold start. Two trims of what the Service Bus kind cannot use there:
 * - `@azure/identity`, for a destination without a connection string (the relay's own Entra ID
 *   identity): on Azure, ManagedIdentityCredential alone with the app's user-assigned identity
 *   (AZURE_CLIENT_ID, set on every app by stacks/azure/nodeFunctionApp.ts), not the package's every
 *   credential; outside Azure there is no Azure identity to use, so it resolves to a module that
 *   says to give a connection string (DefaultAzureCredential would try each credential and fail);
 * - `@azure/service-bus` narrowed to the ServiceBusClient it uses, as for the inbound queue.
 * Only the relay sends to destinations: the other functions reach senders.ts through the outbound
 * module's index (and drop its code), but esbuild would still emit each kind's SDK chunk for its
 * dynamic imports; there each kind's module resolves to one that says so.
 */
const SERVICE_BUS_DESTINATION = /shared[\\/]outbound[\\/]destinations[\\/]serviceBus\.ts$/;
const DESTINATION_SENDERS = /shared[\\/]outbound[\\/]destinations[\\/]senders\.ts$/;

function destinationTrims(cloud: Cloud, fn: FunctionName): Plugin {
  return {
    name: "destination-trims",
    setup(b) {
      if (fn !== "relay") {
        b.onResolve({ filter: /^\.\/\w+\.js$/ }, (args) => (args.kind === "dynamic-import" && DESTINATION_SENDERS.test(args.importer) ? { path: args.importer, namespace: "destination-elsewhere" } : undefined));
        b.onLoad({ filter: /.*/, namespace: "destination-elsewhere" }, async (args) => {
          const opened = [...new Set([...(await readFile(args.path, "utf8")).matchAll(/\(await import\("\.\/\w+\.js"\)\)\.(\w+)/g)].map((m) => m[1]!))];
          const refuse = `() => { throw new Error("Destinations are sent by the relay function; the ${fn} function's bundle carries no sender (functions/build.ts)."); }`;
          return { contents: opened.map((name) => `export const ${name} = ${refuse};`).join("\n"), loader: "js" };
        });
      }
      b.onResolve({ filter: /^@azure\/identity$/ }, (args) => (args.namespace === "file" && SERVICE_BUS_DESTINATION.test(args.importer) ? { path: args.importer, namespace: "destination-identity" } : undefined));
      b.onLoad({ filter: /.*/, namespace: "destination-identity" }, async (args) => {
        const used = new Set([...(await readFile(args.path, "utf8")).matchAll(/import\("@azure\/identity"\)\)\.(\w+)/g)].map((m) => m[1]));
        if ([...used].some((u) => u !== "DefaultAzureCredential") || used.size === 0) throw new Error(`${args.path} uses ${[...used].join(", ") || "no DefaultAzureCredential"} of @azure/identity; functions/build.ts provides DefaultAzureCredential only there: update it.`);
        if (cloud === "azure") {
          return {
            contents: [
              `import { ManagedIdentityCredential } from "@azure/identity";`,
              "// The app's user-assigned identity (AZURE_CLIENT_ID, set by the stack), as functions/azure/connections.ts uses it.",
              "export class DefaultAzureCredential extends ManagedIdentityCredential { constructor() { super(process.env.AZURE_CLIENT_ID ? { clientId: process.env.AZURE_CLIENT_ID } : {}); } }",
            ].join("\n"),
            resolveDir: root,
          };
        }
        return {
          contents: `export class DefaultAzureCredential { constructor() { throw new Error("This Service Bus destination has no connection string, so the relay would send as its Azure managed identity, which a relay running on ${cloud.toUpperCase()} does not have: give destination.credentials.connectionString (a shared access policy with Send only)."); } }`,
          loader: "js",
        };
      });
      b.onResolve({ filter: /^@azure\/service-bus$/ }, (args) => (args.namespace === "file" && SERVICE_BUS_DESTINATION.test(args.importer) ? { path: args.importer, namespace: "destination-service-bus" } : undefined));
      b.onLoad({ filter: /.*/, namespace: "destination-service-bus" }, async (args) => {
        const used = new Set((await readFile(args.path, "utf8")).match(/\bsdk\.\w+/g));
        if ([...used].some((u) => u !== "sdk.ServiceBusClient")) throw new Error(`${args.path} uses ${[...used].join(", ")} of @azure/service-bus; functions/build.ts re-exports ServiceBusClient only there: update it.`);
        return { contents: `export { ServiceBusClient } from ${JSON.stringify(join(root, "node_modules/@azure/service-bus/dist-esm/src/serviceBusClient.js"))};`, resolveDir: root };
      });
    },
  };
}

/**
 * Packages the platform provides, left out of the bundle: the Azure Node worker provides
 * `@azure/functions-core`; on GCP the buildpack installs the package.json dependencies below.
 */
function externals(cloud: Cloud): string[] {
  const always = ["pg-native", "@electric-sql/pglite"];
  if (cloud === "azure") return [...always, "@azure/functions-core"];
  if (cloud === "gcp") return [...always, ...Object.keys(GCP_DEPENDENCIES)];
  return always;
}

/**
 * `INBOUND_HANDLERS=<module>` at build time: the user's handler module is bundled into every
 * function in place of shared/cloud/bundledHandlers.ts (which exports none), validated as the
 * local platform validates it. Unset: the default bundles, with no handlers.
 */
function inboundHandlers(spec: string): Plugin {
  const path = resolve(process.cwd(), spec);
  return {
    name: "inbound-handlers",
    setup(b) {
      b.onLoad({ filter: /shared[\\/]cloud[\\/]bundledHandlers\.ts$/ }, () => {
        if (!existsSync(path)) throw new Error(`INBOUND_HANDLERS: ${path} does not exist; set it to your handler module, relative to ${process.cwd()}.`);
        return {
          contents: [
            `import * as module from ${JSON.stringify(path)};`,
            `import { handlersOf } from ${JSON.stringify(join(root, "shared/inbound/handlers.ts"))};`,
            `const handlers = handlersOf(module, ${JSON.stringify(`INBOUND_HANDLERS (${spec})`)});`,
            "export function bundledHandlers() { return handlers; }",
            `export function useBundledHandlers() { throw new Error("This bundle was built with INBOUND_HANDLERS; its handlers are fixed."); }`,
          ].join("\n"),
          loader: "ts",
          resolveDir: root,
        };
      });
    },
  };
}

const QUICKJS_LOADER = /node_modules[\\/]@jitl[\\/]quickjs-wasmfile-release-sync[\\/]dist[\\/]emscripten-module\.mjs$/;
const QUICKJS_WASM = join(root, "node_modules/@jitl/quickjs-wasmfile-release-sync/dist/emscripten-module.wasm");

const BANNER = "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";
const DIRNAME_BANNER = " import { fileURLToPath as __fu } from 'node:url'; import { dirname as __dn } from 'node:path'; const __filename = __fu(import.meta.url); const __dirname = __dn(__filename);";

export interface BuildOptions {
  /** The user's inbound handler module to bundle into every function. Default: INBOUND_HANDLERS, or none. */
  inboundHandlers?: string;
}

export async function buildFunctions(outDir = join(root, "dist/functions"), options: BuildOptions = {}): Promise<BuiltFunction[]> {
  const built: BuiltFunction[] = [];
  const handlerModule = options.inboundHandlers ?? process.env.INBOUND_HANDLERS;
  const handlerPlugins = handlerModule ? [inboundHandlers(handlerModule)] : [];
  for (const cloud of CLOUDS) {
    const sources = new Set(await readdir(join(root, "functions", cloud)).catch(() => []));
    for (const name of FUNCTIONS) {
      if (!sources.has(`${name}.ts`)) throw new Error(`functions/${cloud}/${name}.ts is missing: every cloud needs ${FUNCTIONS.join(", ")}.`);
      const dir = join(outDir, cloud, name);
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      const result = await build({
        entryPoints: [join(root, "functions", cloud, `${name}.ts`)],
        // Code splitting makes the runtime's dynamic imports real: a queue or storage SDK a function
        // does not call at cold start is a chunk loaded on first use, not part of index.mjs.
        outdir: dir,
        splitting: true,
        entryNames: "index",
        chunkNames: "chunks/[name]-[hash]",
        outExtension: { ".js": ".mjs" },
        bundle: true,
        minify: true,
        format: "esm",
        platform: "node",
        // ES module builds first (AWS SDK v3's dist-es): esbuild can drop what a client never uses.
        mainFields: ["module", "main"],
        target: "node22",
        sourcemap: false,
        legalComments: "none",
        // pg's optional native binding is never used; PGlite is for local runs only.
        external: externals(cloud),
        // The destination trims first: they resolve some of our own relative imports (senders.ts's kinds).
        plugins: [...handlerPlugins, destinationTrims(cloud, name), ...(cloud === "azure" ? [trims, azureTrims] : [trims])],
        metafile: true,
        // Bundled CommonJS dependencies call require(); give ESM output one. On GCP google-gax and
        // grpc-js also name __dirname at load (for proto directories the bundled clients never read).
        banner: { js: BANNER + (cloud === "gcp" ? DIRNAME_BANNER : "") },
        logLevel: "warning",
      });
      // Beside whichever output file holds migrate.ts (the entry or, with splitting, a chunk).
      const migrator = Object.entries(result.metafile.outputs).find(([, o]) => Object.keys(o.inputs).some((i) => /shared[\\/]db[\\/]migrate\.ts$/.test(i)))?.[0];
      if (migrator) await cp(join(root, "shared/sql/migrations"), join(dirname(resolve(migrator)), "sql/migrations"), { recursive: true });
      // QuickJS's loader (transformations, shared/outbound/transformations.ts) reads its
      // WebAssembly file from beside itself (`new URL("emscripten-module.wasm", import.meta.url)`):
      // beside whichever chunk holds that loader. Without it the first transformation fails (ENOENT).
      for (const [file, output] of Object.entries(result.metafile.outputs)) {
        if (Object.keys(output.inputs).some((i) => QUICKJS_LOADER.test(i))) await cp(QUICKJS_WASM, join(dirname(resolve(file)), "emscripten-module.wasm"));
      }
      // Next to (not inside) the directory to zip: what is in the bundle, for `bench/functions.ts`.
      await writeFile(join(outDir, cloud, `${name}.meta.json`), JSON.stringify(result.metafile));
      const imported = new Set(Object.values(result.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path)));
      const dependencies = Object.fromEntries(Object.entries(GCP_DEPENDENCIES).filter(([pkg]) => pkg === "@google-cloud/functions-framework" || imported.has(pkg)));
      for (const [file, content] of Object.entries(runtimeFiles(cloud, name, dependencies))) {
        await writeFile(join(dir, file), content + "\n");
      }
      built.push({ cloud, name, dir, ...outputSizes(result.metafile) });
    }
  }
  return built;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const built = await buildFunctions();
  for (const f of built) {
    console.log(`${f.cloud}/${f.name}`.padEnd(18), `${(f.bytes / 1024).toFixed(0)} KiB`.padStart(9), `(${(f.loadedBytes / 1024).toFixed(0)} KiB at import)`.padStart(22), f.dir);
  }
}
