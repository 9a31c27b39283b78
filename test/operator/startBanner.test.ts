/**
 * Issue 27 item 17: `npm start` prints its banner (URL, admin page, token, CLI line) as one block:
 * the JSON log lines of the start (info level, as a newcomer sees them) come before or after it,
 * never between its lines.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { startPlatformProcess } from "../support/platformProcess.js";

it("npm start's banner is four consecutive lines, with no log line inside it", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "banner-test-"));
  const started = await startPlatformProcess({ DATA_DIR: join(dataDir, "pglite"), LOG_LEVEL: "info", ADMIN_TOKEN: "banner-test-token-0123456789" });
  try {
    const output = await started.printed(/ {2}CLI: .*\n/, 30_000);
    const lines = output.split("\n");
    const first = lines.findIndex((l) => l.startsWith("multicloud-webhooks is running at"));
    expect(first, output).toBeGreaterThanOrEqual(0);
    expect(lines.slice(first, first + 4).map((l) => l.slice(0, 15)), output).toEqual([
      "multicloud-webh", "  admin page:  ", "  admin token: ", "  CLI:         ",
    ]);
    // The start did log (JSON lines), so the test saw what it is about.
    expect(lines.some((l) => l.startsWith("{"))).toBe(true);
  } finally {
    await started.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}, 180_000);
