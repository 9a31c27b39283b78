/**
 * The core imports no queue SDK: each SDK is imported by its adapter only, and only lazily
 * (`await import(...)`; `import type` is erased at build). A static scan of shared/, so a stray
 * import fails here rather than loading an SDK into the local platform.
 */
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Each queue SDK and the modules allowed to load it (space-separated). */
const OWNERS: Record<string, string> = {
  "@aws-sdk/client-sqs": "shared/queue/sqs.ts shared/outbound/destinations/sqs.ts",
  "@google-cloud/pubsub": "shared/queue/pubsub.ts shared/queue/pubsubPublisher.ts shared/outbound/destinations/pubsub.ts",
  "@azure/service-bus": "shared/queue/serviceBus.ts shared/outbound/destinations/serviceBus.ts",
  // Destinations beyond HTTP (issue 31): each kind's client, loaded on its first destination.
  "@aws-sdk/client-sns": "shared/outbound/destinations/sns.ts",
  "@aws-sdk/client-eventbridge": "shared/outbound/destinations/eventbridge.ts",
  "amqplib": "shared/outbound/destinations/rabbitmq.ts",
  "@aws-lambda-powertools/batch": "shared/queue/triggers/sqs.ts",
};

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sources(path)));
    else if (entry.name.endsWith(".ts")) out.push(path);
  }
  return out;
}

describe("queue SDK boundary", () => {
  it("no module in shared/ imports a queue SDK statically, and only its adapter loads it", async () => {
    const problems: string[] = [];
    for (const file of await sources(join(ROOT, "shared"))) {
      const name = relative(ROOT, file);
      const text = await readFile(file, "utf8");
      for (const sdk of Object.keys(OWNERS)) {
        const quoted = JSON.stringify(sdk);
        // A value import (not `import type`) or a re-export would load the SDK with the module.
        const staticImport = new RegExp(`^\\s*(import(?!\\s+type\\b)[^;]*?from|export[^;]*?from)\\s*${quoted.replace(/[/@-]/g, "\\$&")}`, "m");
        if (staticImport.test(text)) problems.push(`${name}: static import of ${sdk}`);
        if (text.includes(`import(${quoted})`) && !OWNERS[sdk]!.split(" ").includes(name)) problems.push(`${name}: loads ${sdk} (only ${OWNERS[sdk]} may)`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("the scan would see a static import (the check itself can fail)", () => {
    const quoted = JSON.stringify("@aws-sdk/client-sqs").replace(/[/@-]/g, "\\$&");
    const re = new RegExp(`^\\s*(import(?!\\s+type\\b)[^;]*?from|export[^;]*?from)\\s*${quoted}`, "m");
    expect(re.test('import { SQSClient } from "@aws-sdk/client-sqs";')).toBe(true);
    expect(re.test('import type { SQSClient } from "@aws-sdk/client-sqs";')).toBe(false);
    expect(re.test('import {\n  type A,\n  B,\n} from "@aws-sdk/client-sqs";')).toBe(true);
  });
});
