/** Issue 27 item 17: `npm run preflight` without a cloud names the command a user types. */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

it("npm run preflight with no cloud (or an unknown one) prints the npm command and exits 2", () => {
  for (const args of [[], ["mars"]]) {
    const run = spawnSync(process.execPath, ["--import", "tsx", "stacks/preflight.ts", ...args], {
      cwd: fileURLToPath(new URL("../../", import.meta.url)), env: { PATH: process.env.PATH, HOME: process.env.HOME }, encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toContain("usage: npm run preflight -- <aws|azure|gcp>");
    expect(run.stderr).not.toContain("tsx stacks/preflight.ts");
  }
}, 60_000);
