/**
 * The relay as it was before issue 15's flow control (per-subscription limits and fair claims),
 * for side-by-side runs: its files are read from git at BENCH_BASELINE_COMMIT and written to a
 * temporary directory, where their imports point back at this tree for everything else. Its
 * prepared statements get other names (both relays run in one process), and its database gets the
 * index its claim walked (migration 011 replaced it), so it runs as it did.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Database } from "../../shared/db/port.js";
import type { createRelay } from "../../shared/outbound/relay.js";

/** The last commit before the flow control. */
export const BASELINE_COMMIT = process.env.BENCH_BASELINE_COMMIT ?? "87208ea63c3e0b05d25962d0d09aa2bec1a661ab";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** The files the flow control changed, relative to shared/outbound. */
const COPIED = ["relay.ts", "relayLoop.ts", "leaseKeeper.ts", "sql/claimDeliveries.ts", "sql/completeDeliveries.ts"];

export interface Baseline {
  createRelay: typeof createRelay;
  /** Gives a fresh, migrated database the index the old claim used. */
  prepare(db: Database): Promise<void>;
  remove(): void;
}

export async function loadBaseline(): Promise<Baseline> {
  const dir = mkdtempSync(join(tmpdir(), "relay-baseline-"));
  for (const file of COPIED) {
    let text = execFileSync("git", ["-C", REPO, "show", `${BASELINE_COMMIT}:shared/outbound/${file}`], { encoding: "utf8" });
    text = text.replace(/from "(\.\.?\/[^"]+)"/g, (_, spec: string) => {
      const target = posix.normalize(posix.join(posix.dirname(file), spec)).replace(/\.js$/, ".ts");
      const copied = COPIED.includes(target);
      return `from "${copied ? pathToFileURL(join(dir, target)).href : pathToFileURL(join(REPO, "shared/outbound", target)).href}"`;
    });
    text = text.replace(/prepared\("outbound_/g, 'prepared("baseline_outbound_');
    // Since migration 039 the attempt log is a view: an older relay writes its rows to the table.
    text = text.replace(/INSERT INTO outbound_attempts\b/g, "INSERT INTO outbound_attempt_rows");
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  const relay = (await import(pathToFileURL(join(dir, "relay.ts")).href)) as { createRelay: typeof createRelay };
  // A baseline from before migration 011 walked the time-ordered due index (011 dropped it); a later
  // one (after flow control) must not get it: the extra index would slow only the baseline's writes.
  const claimText = execFileSync("git", ["-C", REPO, "show", `${BASELINE_COMMIT}:shared/outbound/sql/claimDeliveries.ts`], { encoding: "utf8" });
  const needsOldIndex = !claimText.includes("outbound_relay_holds");
  return {
    createRelay: relay.createRelay,
    prepare: async (db) => {
      if (needsOldIndex) await db.query("CREATE INDEX IF NOT EXISTS outbound_deliveries_due ON outbound_deliveries (next_attempt_at) WHERE status = 'pending'");
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
