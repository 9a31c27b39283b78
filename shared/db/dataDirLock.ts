/**
 * One process at a time on an embedded (PGlite) data directory. PGlite is PostgreSQL in this
 * process, with no server to arbitrate: two processes on one directory each run their own
 * PostgreSQL over the same files, acknowledge writes the other never sees, and can leave the
 * directory unopenable. So the directory is locked by a file beside it, `<dataDir>.lock`
 * (outside PGlite's own directory, like the key file), holding the owner's pid and how to tell
 * that very process apart from a later one reusing its pid.
 *
 * The file is created atomically (written aside, then hard-linked into place, which fails if it
 * exists), so a reader never sees half a lock. A lock whose process is gone (SIGKILL, a crash, a
 * container restarted) is stale and taken over; a live holder's is refused with
 * DataDirLockedError, which says who holds it and what to do.
 */
import { hostname } from "node:os";
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";

export interface LockHolder {
  pid: number;
  hostname: string;
  /** The holder's start time in clock ticks since boot (/proc/<pid>/stat), where Linux tells it. */
  procStart?: string;
  /** The command line of the holder, to name it in the refusal. */
  command: string;
  since: string;
}

/** Another live process holds the embedded data directory. */
export class DataDirLockedError extends Error {
  override name = "DataDirLockedError";
  constructor(readonly dataDir: string, readonly holder: LockHolder, readonly lockFile: string) {
    super(
      `The embedded database in ${dataDir} is in use by process ${holder.pid}${holder.hostname !== hostname() ? ` on ${holder.hostname}` : ""} ` +
      `(${holder.command}, since ${holder.since}). The embedded database (PGlite) can be opened by one process at a time: ` +
      `stop that process first, or give this one its own DATA_DIR, or share one database between processes with PostgreSQL (set DATABASE_URL). ` +
      `If that process is not ours, the lock is stale: delete ${lockFile}.`,
    );
  }
}

export interface DataDirLock {
  readonly file: string;
  release(): void;
}

/** Locks held by this process, by lock file: a lock naming our own pid but not in here is a previous incarnation's. */
const heldHere = new Set<string>();

export function lockFilePath(dataDir: string): string {
  return `${dataDir.replace(/\/+$/, "")}.lock`;
}

/** Takes the lock of `dataDir`, recovering a stale one; throws DataDirLockedError while another process holds it. */
export function lockDataDir(dataDir: string): DataDirLock {
  const file = lockFilePath(dataDir);
  const me: LockHolder = { pid: process.pid, hostname: hostname(), procStart: procStart(process.pid), command: process.argv.slice(1).join(" ") || process.argv0, since: new Date().toISOString() };
  const text = JSON.stringify(me);
  for (let attempt = 0; attempt < 5; attempt++) {
    if (tryCreate(file, text)) {
      heldHere.add(file);
      const onExit = () => removeIfOurs(file, text);
      process.once("exit", onExit);
      return {
        file,
        release() {
          process.removeListener("exit", onExit);
          heldHere.delete(file);
          removeIfOurs(file, text);
        },
      };
    }
    const seen = read(file);
    if (seen === undefined) continue; // released meanwhile
    const holder = parse(seen);
    if (holder && isAlive(holder, file)) throw new DataDirLockedError(dataDir, holder, file);
    takeOverStale(file, seen);
  }
  throw new Error(`Could not lock ${dataDir}: ${file} keeps changing; is another process starting on it? Try again.`);
}

/** Written aside, then linked into place: atomic, and it fails if a lock exists. */
function tryCreate(file: string, text: string): boolean {
  const aside = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  writeFileSync(aside, text, { mode: 0o600 });
  try {
    linkSync(aside, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    unlinkSync(aside);
  }
}

/**
 * Moves a stale lock out of the way. Renamed rather than deleted, then checked: if two processes
 * recover the same stale lock at once and one has already put its own in place, the other must
 * not delete it; it puts it back (link fails only if yet another lock appeared).
 */
function takeOverStale(file: string, staleText: string): void {
  const moved = `${file}.stale.${process.pid}`;
  try {
    renameSync(file, moved);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  const got = read(moved);
  if (got !== undefined && got !== staleText) {
    try { linkSync(moved, file); } catch { /* another lock is in place: it wins */ }
  }
  try { unlinkSync(moved); } catch { /* already gone */ }
}

function isAlive(holder: LockHolder, file: string): boolean {
  if (holder.hostname !== hostname()) return true; // cannot look at another machine's processes: refuse
  if (holder.pid === process.pid) return heldHere.has(file);
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  // The pid is in use; by the holder only if it started when the holder did (pids are reused).
  const now = procStart(holder.pid);
  return holder.procStart === undefined || now === undefined || now === holder.procStart;
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot (Linux only). */
function procStart(pid: number): string | undefined {
  const stat = read(`/proc/${pid}/stat`);
  // The command name (field 2) is in parentheses and may hold spaces: count from its end.
  return stat?.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
}

function removeIfOurs(file: string, text: string): void {
  if (read(file) === text) {
    try { unlinkSync(file); } catch { /* already gone */ }
  }
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

function parse(text: string): LockHolder | undefined {
  try {
    const v = JSON.parse(text) as LockHolder;
    return typeof v.pid === "number" && typeof v.hostname === "string" ? v : undefined;
  } catch {
    return undefined; // not a lock we wrote: treated as stale
  }
}
