/**
 * One process at a time on an embedded data directory (issue 27, item 1). Two `npm start` on one
 * DATA_DIR used to both run, each acknowledging writes the other never saw; now the second is
 * refused, saying which process holds the directory and what to do, and so is `openDatabase` (the
 * README's snippet) in any other process. A lock left by a SIGKILLed holder does not block the
 * next start, and the directory opens with its data.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DataDirLockedError, lockDataDir, lockFilePath } from "../../shared/db/dataDirLock.js";
import { openDatabase } from "../../shared/db/open.js";
import { startPlatformProcess } from "../support/platformProcess.js";

const TOKEN = "data-dir-lock-test-token-0123456789";
const startServer = (dataDir: string) => startPlatformProcess({ DATA_DIR: dataDir, ADMIN_TOKEN: TOKEN });

const postEvent = (baseUrl: string, id: string) =>
  fetch(`${baseUrl}/events`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ id, type: "lock.test", data: {} }) });

describe("the embedded data directory's lock", () => {
  let dir: string;
  beforeAll(() => { dir = mkdtempSync(join(tmpdir(), "wh-lock-")); });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses a second server and openDatabase while one runs, and lets the next start after a SIGKILL", async () => {
    const dataDir = join(dir, "pglite");
    const first = await startServer(dataDir);
    expect(first.baseUrl, first.output()).toBeDefined();
    try {
      expect((await postEvent(first.baseUrl!, "kept-1")).status).toBe(201);

      const second = await startServer(dataDir);
      if (second.baseUrl) await second.stop(); // (on the code before the lock it started)
      expect(second.baseUrl, "a second server on the same DATA_DIR must not start").toBeUndefined();
      expect(await second.exit).toBe(1);
      const refusal = second.output();
      expect(refusal).toContain(`in use by process ${first.child.pid}`);
      expect(refusal).toContain(dataDir);
      expect(refusal).toMatch(/stop that process/);
      expect(refusal).toMatch(/PostgreSQL \(set DATABASE_URL\)/);
      expect(refusal).not.toMatch(/\n\s+at /); // no stack trace

      // The README's snippet, in another process (this one), is refused the same way.
      const refused = await openDatabase({ dataDir }).then(() => undefined, (e: unknown) => e);
      expect(refused).toBeInstanceOf(DataDirLockedError);
      expect((refused as DataDirLockedError).holder.pid).toBe(first.child.pid);
      expect((refused as Error).message).toMatch(/shared\/server\/main\.ts/); // names the holder's command
    } finally {
      await first.stop("SIGKILL");
    }

    // SIGKILL left the lock file behind: it names a dead process, so it is taken over.
    expect(existsSync(lockFilePath(dataDir))).toBe(true);
    const db = await openDatabase({ dataDir });
    try {
      const kept = await db.query<{ id: string }>("SELECT id FROM outbound_events WHERE id = 'kept-1'");
      expect(kept.rows).toHaveLength(1);
      // Held by this process now: a second opener here is refused too.
      await expect(openDatabase({ dataDir })).rejects.toThrow(`in use by process ${process.pid}`);
    } finally {
      await db.close();
    }
    expect(existsSync(lockFilePath(dataDir)), "closing releases the lock").toBe(false);

    // And the server starts again on it.
    const again = await startServer(dataDir);
    try {
      expect(again.baseUrl, again.output()).toBeDefined();
    } finally {
      await again.stop();
    }
  }, 400_000);

  it("takes over locks of processes that are gone, even when their pid is in use again", () => {
    const dataDir = join(dir, "stale");
    const file = lockFilePath(dataDir);
    const stale = (holder: object) => writeFileSync(file, JSON.stringify({ hostname: hostname(), command: "old", since: "2026-01-01T00:00:00Z", ...holder }));

    // A process that has exited.
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    stale({ pid: Number(dead.stdout) });
    lockDataDir(dataDir).release();

    // Our own pid, not held by this process: a previous incarnation (a restarted container's pid 1).
    stale({ pid: process.pid });
    lockDataDir(dataDir).release();

    // A live pid (our parent) that started at another time than the holder did: a reused pid.
    stale({ pid: process.ppid, procStart: "1" });
    lockDataDir(dataDir).release();

    // Not a lock we wrote.
    writeFileSync(file, "garbage");
    const lock = lockDataDir(dataDir);
    expect(JSON.parse(readFileSync(file, "utf8")).pid).toBe(process.pid);
    lock.release();
    expect(existsSync(file)).toBe(false);
  });

  it("refuses while the holder is alive", () => {
    const dataDir = join(dir, "live");
    writeFileSync(lockFilePath(dataDir), JSON.stringify({ pid: process.ppid, hostname: hostname(), command: "vitest", since: "2026-01-01T00:00:00Z" }));
    expect(() => lockDataDir(dataDir)).toThrow(DataDirLockedError);
    expect(() => lockDataDir(dataDir)).toThrow(`in use by process ${process.ppid} (vitest, since 2026-01-01T00:00:00Z)`);
    rmSync(lockFilePath(dataDir));
  });
});
