/**
 * `npm start` without ADMIN_TOKEN on the embedded database (issue 27, item 4): the generated token
 * is kept like the encryption key, in `<DATA_DIR>.admin-token` (mode 0600), so a restart keeps the
 * token the CLI and the admin page were given. It is printed in full only when generated; a
 * later start names the file instead.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminTokenFilePath, localAdminToken } from "../../shared/server/localAdminToken.js";
import { startPlatformProcess } from "../support/platformProcess.js";

describe("the generated admin token of the embedded database", () => {
  let dir: string;
  beforeAll(() => { dir = mkdtempSync(join(tmpdir(), "wh-admin-token-")); });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("is kept across restarts in <DATA_DIR>.admin-token (0600) and shown in full only when generated", async () => {
    const dataDir = join(dir, "pglite");
    const file = adminTokenFilePath(dataDir);
    const me = async (baseUrl: string, token: string) => (await fetch(`${baseUrl}/me`, { headers: { authorization: `Bearer ${token}` } })).status;

    const first = await startPlatformProcess({ DATA_DIR: dataDir });
    let token: string;
    try {
      expect(first.baseUrl, first.output()).toBeDefined();
      token = /admin token: +(\S+)/.exec(await first.printed(/CLI:.*\n/))![1]!;
      expect(first.output()).toContain(`kept in ${file}`);
      expect(readFileSync(file, "utf8").trim()).toBe(token);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(await me(first.baseUrl!, token)).toBe(200);
    } finally {
      await first.stop();
    }

    const second = await startPlatformProcess({ DATA_DIR: dataDir });
    try {
      expect(second.baseUrl, second.output()).toBeDefined();
      await second.printed(/CLI:.*\n/);
      expect(await me(second.baseUrl!, token), "the token from before still works").toBe(200);
      expect(second.output()).not.toContain(token); // named by its file, not printed again
      expect(second.output()).toContain(`the same as before: kept in ${file}`);
      expect(second.output()).toContain(`ADMIN_TOKEN="$(cat ${file})"`);
    } finally {
      await second.stop();
    }
  }, 400_000);

  it("lasts one run where nothing is kept (a memory database, PostgreSQL), and a broken file is refused with what to do", async () => {
    const memory = await localAdminToken({ DATA_DIR: "memory://" });
    expect(memory).toMatchObject({ file: null, generated: true });
    expect((await localAdminToken({ DATA_DIR: "memory://" })).token).not.toBe(memory.token);
    expect(await localAdminToken({ DATABASE_URL: "postgres://x@127.0.0.1/db", DATA_DIR: join(dir, "unused") })).toMatchObject({ file: null });

    const dataDir = join(dir, "broken");
    const made = await localAdminToken({ DATA_DIR: dataDir });
    expect(made).toMatchObject({ file: adminTokenFilePath(dataDir), generated: true });
    expect(await localAdminToken({ DATA_DIR: dataDir })).toEqual({ ...made, generated: false });
    writeFileSync(adminTokenFilePath(dataDir), "short\n");
    await expect(localAdminToken({ DATA_DIR: dataDir })).rejects.toThrow(/delete it to have a new one generated, or set ADMIN_TOKEN/);
  });
});
