import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateRawSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { ArtifactsMissingError, resolveArtifacts } from "../../stacks/artifacts.js";
import { envNameFor, loadStackConfig, readContext, StackConfigError } from "../../stacks/config.js";
import { zipBytes } from "../../stacks/zipDirectory.js";
import { fixtureArtifacts } from "./synthFixture.js";

describe("stack configuration", () => {
  it("has defaults", () => {
    const config = loadStackConfig({}, {});
    expect(config).toMatchObject({ namePrefix: "webhooks", maxDeliveryAttempts: 5, processorConcurrency: 5, awsDirectQueueIngress: false });
  });

  it("takes cdktf.json context, and the environment over it", () => {
    const config = loadStackConfig({ maxDeliveryAttempts: 8, namePrefix: "acme" }, { WEBHOOKS_MAX_DELIVERY_ATTEMPTS: "12", WEBHOOKS_AWS_DIRECT_QUEUE_INGRESS: "true" });
    expect(config.maxDeliveryAttempts).toBe(12);
    expect(config.namePrefix).toBe("acme");
    expect(config.awsDirectQueueIngress).toBe(true);
    expect(envNameFor("processorConcurrency")).toBe("WEBHOOKS_PROCESSOR_CONCURRENCY");
  });

  it("names the key, its source and the expectation for each bad value", () => {
    const attempt = () => loadStackConfig({ namePrefix: "Bad_Prefix", bogus: 1 }, { WEBHOOKS_MAX_DELIVERY_ATTEMPTS: "3", WEBHOOKS_LOG_RETENTION_DAYS: "10" });
    expect(attempt).toThrow(StackConfigError);
    const message = (() => {
      try {
        attempt();
      } catch (e) {
        return (e as Error).message;
      }
      return "";
    })();
    expect(message).toContain("namePrefix (from cdktf.json context.webhooks.namePrefix): 3-12 characters");
    expect(message).toContain("maxDeliveryAttempts (from WEBHOOKS_MAX_DELIVERY_ATTEMPTS)");
    expect(message).toContain("logRetentionDays (from WEBHOOKS_LOG_RETENTION_DAYS): one of 1, 3, 5");
    expect(message).toContain("bogus: unknown key");
  });

  it("rejects a capacity range upside down", () => {
    expect(() => loadStackConfig({ auroraMinCapacity: 8, auroraMaxCapacity: 2 }, {})).toThrow(/auroraMinCapacity \(8\) must not exceed/);
  });

  it("reads context.webhooks from cdktf.json, or from the CLI's CDKTF_CONTEXT_JSON", () => {
    const dir = mkdtempSync(join(tmpdir(), "webhooks-ctx-"));
    const file = join(dir, "cdktf.json");
    writeFileSync(file, JSON.stringify({ context: { webhooks: { processorConcurrency: 9 } } }));
    expect(readContext(file, {})).toEqual({ processorConcurrency: 9 });
    expect(readContext(file, { CDKTF_CONTEXT_JSON: JSON.stringify({ webhooks: { namePrefix: "cli" } }) })).toEqual({ namePrefix: "cli" });
    expect(readContext(join(dir, "absent.json"), {})).toEqual({});
    writeFileSync(file, JSON.stringify({ context: { webhooks: [1] } }));
    expect(() => readContext(file, {})).toThrow(/must be an object/);
  });
});

describe("function artifacts", () => {
  it("fails early, naming each missing directory and the build command", () => {
    const empty = mkdtempSync(join(tmpdir(), "webhooks-empty-"));
    mkdirSync(join(empty, "aws", "ingest"), { recursive: true });
    writeFileSync(join(empty, "aws", "ingest", "index.mjs"), "");
    expect(() => resolveArtifacts("aws", { dir: empty })).toThrow(ArtifactsMissingError);
    expect(() => resolveArtifacts("aws", { dir: empty })).toThrow(/aws\/processor\/index\.mjs[\s\S]*aws\/relay\/index\.mjs[\s\S]*run `npm run build:functions` first/);
  });

  it("substitutes placeholders only when asked", () => {
    const empty = mkdtempSync(join(tmpdir(), "webhooks-empty-"));
    const dirs = resolveArtifacts("gcp", { dir: empty, placeholders: true });
    expect(readFileSync(join(dirs.relay, "index.mjs"), "utf8")).toContain("run npm run build:functions");
  });

  it("zips a directory deterministically, with contents that inflate back", () => {
    const root = fixtureArtifacts();
    const dir = join(root, "azure", "processor");
    const a = zipBytes(dir);
    const b = zipBytes(dir);
    expect(a.equals(b)).toBe(true);
    // First local header: name at 30, data after the name.
    const nameLength = a.readUInt16LE(26);
    const compressedSize = a.readUInt32LE(18);
    expect(a.subarray(30, 30 + nameLength).toString()).toBe("index.mjs");
    const data = inflateRawSync(a.subarray(30 + nameLength, 30 + nameLength + compressedSize));
    expect(data.toString()).toBe(readFileSync(join(dir, "index.mjs"), "utf8"));
    expect(a.readUInt16LE(a.length - 22 + 10)).toBe(2); // entries: index.mjs, package.json
  });
});
