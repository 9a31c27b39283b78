/**
 * The function bundles of a real `buildFunctions` run: each under the 1 MiB the issue sets (a size,
 * deterministic, unlike the cold-start times, which are the benchmark's business:
 * bench/functions.ts), and, for Azure, only what each function can reach (esbuild metafiles).
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildFunctions, type BuiltFunction } from "../../functions/build.js";

let outDir: string;
let built: BuiltFunction[];
const inputs = new Map<string, string[]>();

beforeAll(async () => {
  outDir = await mkdtemp(join(tmpdir(), "azure-bundles-"));
  built = await buildFunctions(outDir);
  for (const name of ["ingest", "processor", "relay"]) {
    const meta = JSON.parse(await readFile(join(outDir, "azure", `${name}.meta.json`), "utf8")) as { outputs: Record<string, { inputs: Record<string, unknown> }> };
    inputs.set(name, Object.values(meta.outputs).flatMap((o) => Object.keys(o.inputs)));
  }
}, 180_000);
afterAll(async () => { await rm(outDir, { recursive: true, force: true }); });

const has = (name: string, pattern: RegExp) => inputs.get(name)!.some((file) => pattern.test(file));

describe("every function bundle", () => {
  it("is under 1 MiB minified, all chunks counted (what is zipped)", () => {
    expect(built.map((f) => `${f.cloud}/${f.name}`).sort()).toEqual(
      ["aws/ingest", "aws/migrate", "aws/processor", "aws/relay", "azure/ingest", "azure/migrate", "azure/processor", "azure/relay",
        "gcp/ingest", "gcp/migrate", "gcp/processor", "gcp/relay"],
    );
    for (const f of built) expect(f.bytes, `${f.cloud}/${f.name}`).toBeLessThan(1024 * 1024);
  });
});

describe("Azure function bundles", () => {
  it("carry no @azure/identity, MSAL or @azure/storage-blob: our credential and Blob REST client instead", () => {
    for (const name of ["ingest", "processor", "relay"]) {
      expect(has(name, /node_modules\/@azure\/(identity|msal-node|storage-blob|storage-common)\//), name).toBe(false);
    }
    expect(has("ingest", /shared\/objectStore\/azureBlob\.ts$/)).toBe(true);
    expect(has("processor", /shared\/cloud\/azureManagedIdentity\.ts$/)).toBe(true);
  });

  it("the relay carries no Service Bus, AMQP or Blob code; ingest and the processor carry Service Bus without its management client", () => {
    expect(has("relay", /node_modules\/(@azure\/service-bus|@azure\/core-amqp|rhea)\//)).toBe(false);
    expect(has("relay", /shared\/(objectStore\/azureBlob|queue\/serviceBus)\.ts$/)).toBe(false);
    for (const name of ["ingest", "processor"]) {
      expect(has(name, /node_modules\/@azure\/service-bus\/.*serviceBusClient\.js$/), name).toBe(true);
      expect(has(name, /node_modules\/@azure\/service-bus\/.*serviceBusAtomManagementClient\.js$|node_modules\/fast-xml-parser\//), name).toBe(false);
    }
  });
});
