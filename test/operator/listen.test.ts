/** `npm start` on a port already taken: a sentence that names the port and how to choose another. */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { listen, StartError } from "../../shared/server/listen.js";

it("a port in use is a StartError naming it and the way out", async () => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
  const port = (taken.address() as AddressInfo).port;
  try {
    const error = await listen(createServer(), port).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartError);
    expect((error as Error).message).toContain(`Port ${port} on 127.0.0.1 is already in use`);
    expect((error as Error).message).toContain("PORT=8081 npm start");
  } finally {
    taken.close();
  }
});

it("npm start on a taken port prints that sentence, no stack trace, and exits 1", async () => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
  const port = (taken.address() as AddressInfo).port;
  const dataDir = await mkdtemp(join(tmpdir(), "listen-test-"));
  try {
    const child = spawn(process.execPath, ["--import", "tsx", "shared/server/main.ts"], {
      cwd: new URL("../..", import.meta.url).pathname,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: "silent", ADMIN_TOKEN: "listen-test-token-0123456789" },
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => { stderr += c.toString(); });
    const code = await new Promise<number | null>((r) => child.on("exit", r));
    expect(code).toBe(1);
    expect(stderr).toContain(`Port ${port} on 127.0.0.1 is already in use`);
    expect(stderr).not.toMatch(/\n\s+at /);
  } finally {
    taken.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}, 120_000);
