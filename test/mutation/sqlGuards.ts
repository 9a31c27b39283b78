/**
 * `npm run test:mutation:sql`: mutants of the lease and completion guards' SQL, by hand. Stryker
 * mutates JavaScript, not the SQL inside a string (it only empties the whole string, which every
 * database test notices), so the clauses that keep a delivery from being renewed, released or
 * completed by the wrong relay are mutated here: each mutant below drops or changes one clause in
 * a copy of the tree (.scratch/sql-mutants/), runs the guard tests against PGlite and PostgreSQL,
 * and must make one fail. Exits 1 when a mutant survives or a clause is no longer found (the SQL
 * changed: update the mutant with it).
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

interface SqlMutant {
  file: string;
  /** Exact text of the clause in the file (must occur once). */
  find: string;
  replace: string;
  /** What the mutant means, for the report. */
  what: string;
  /** The guard tests that judge it (a test-name pattern: each run opens both databases, so only these run). */
  tests: string;
}

const GUARD_TESTS = ["test/outbound/guards.test.ts"];

export const SQL_MUTANTS: SqlMutant[] = [
  { file: "shared/outbound/sql/renewLeases.ts", find: " AND x.lease_token = h.token", replace: "", what: "renew: another relay's lease renewed", tests: "renewLeases" },
  { file: "shared/outbound/sql/renewLeases.ts", find: " AND x.status = 'pending'", replace: "", what: "renew: a finished or cancelled delivery renewed", tests: "renewLeases" },
  { file: "shared/outbound/sql/renewLeases.ts", find: "FOR UPDATE OF x SKIP LOCKED", replace: "FOR UPDATE OF x", what: "renew: waits for a row being written", tests: "renewLeases" },
  { file: "shared/outbound/sql/renewLeases.ts", find: "now() + $3::float8 * interval '1 second'", replace: "now() + interval '60 seconds'", what: "renew: the lease length ignored", tests: "renewLeases" },
  { file: "shared/outbound/sql/releaseDeliveries.ts", find: " AND d.lease_token = r.token", replace: "", what: "release: another relay's lease released", tests: "releaseDeliveries" },
  { file: "shared/outbound/sql/releaseDeliveries.ts", find: " AND d.status = 'pending'`", replace: "`", what: "release: a cancelled delivery touched", tests: "releaseDeliveries" },
  { file: "shared/outbound/sql/releaseDeliveries.ts", find: "SET lease_token = NULL, lease_expires_at = NULL,", replace: "SET lease_token = NULL,", what: "release: the lease's expiry kept (not claimable at once)", tests: "releaseDeliveries" },
  { file: "shared/outbound/sql/completeDeliveries.ts", find: "WHERE d.id = c.id AND d.lease_token = c.token AND d.status = 'pending'", replace: "WHERE d.id = c.id AND d.status = 'pending'", what: "complete: an outcome under another relay's lease applied", tests: "completeDeliveries" },
  { file: "shared/outbound/sql/completeDeliveries.ts", find: "WHERE d.id = c.id AND d.lease_token = c.token AND d.status = 'pending'", replace: "WHERE d.id = c.id AND d.lease_token = c.token", what: "complete: a cancelled delivery brought back", tests: "completeDeliveries" },
  { file: "shared/outbound/sql/claimDeliveries.ts", find: "${s}.status <> 'disabled' AND ", replace: "", what: "claim: a disabled subscription's deliveries claimed", tests: "claimDueDeliveries" },
  { file: "shared/outbound/sql/claimDeliveries.ts", find: " AND ${s}.paused_at IS NULL", replace: "", what: "claim: a paused subscription's deliveries claimed", tests: "claimDueDeliveries" },
  { file: "shared/outbound/sql/claimDeliveries.ts", find: " AND (${s}.throttled_until IS NULL OR ${s}.throttled_until <= now())", replace: "", what: "claim: a throttled subscription's deliveries claimed", tests: "claimDueDeliveries" },
  { file: "shared/outbound/sql/claimDeliveries.ts", find: "OR ${s}.throttled_until <= now())", replace: "OR false)", what: "claim: a throttle that has passed still holds", tests: "claimDueDeliveries" },
  { file: "shared/outbound/sql/claimDeliveries.ts", find: "OR ${row}.lease_expires_at <= now())", replace: "OR true)", what: "claim: a live lease ignored (two relays send one delivery)", tests: "claimDueDeliveries" },
  { file: "shared/outbound/sql/claimDeliveries.ts", find: "OR ${row}.lease_expires_at <= now())", replace: "OR false)", what: "claim: an expired lease never taken over (a dead relay's deliveries stuck)", tests: "claimDueDeliveries" },
];

const ROOT = resolve(import.meta.dirname, "../..");
const SANDBOX = join(ROOT, ".scratch/sql-mutants");

function prepareSandbox(): void {
  rmSync(SANDBOX, { recursive: true, force: true });
  mkdirSync(SANDBOX, { recursive: true });
  for (const entry of ["shared", "test", "examples", "package.json", "tsconfig.json", "vitest.config.ts"]) {
    if (existsSync(join(ROOT, entry))) cpSync(join(ROOT, entry), join(SANDBOX, entry), { recursive: true });
  }
  symlinkSync(join(ROOT, "node_modules"), join(SANDBOX, "node_modules"), "dir");
}

function testsFail(names?: string): { failed: boolean; output: string } {
  const filter = names ? ["-t", names] : [];
  const r = spawnSync(process.execPath, [join(ROOT, "node_modules/vitest/vitest.mjs"), "run", ...GUARD_TESTS, ...filter], { cwd: SANDBOX, encoding: "utf8", env: process.env });
  return { failed: r.status !== 0, output: `${r.stdout}\n${r.stderr}` };
}

function main(): number {
  const only = process.env.SQL_MUTANTS_ONLY; // e.g. "release": only the mutants whose description contains it
  const chosen = SQL_MUTANTS.filter((x) => !only || x.what.includes(only));
  prepareSandbox();
  const baseline = testsFail([...new Set(chosen.map((m) => m.tests))].join("|"));
  if (baseline.failed) {
    console.error(`The guard tests fail without any mutant; fix them first:\n${baseline.output}`);
    return 1;
  }
  let bad = 0;
  console.log("| mutant | file | result |\n| --- | --- | --- |");
  for (const m of chosen) {
    const path = join(SANDBOX, m.file);
    const original = readFileSync(path, "utf8");
    const at = original.indexOf(m.find);
    if (at < 0 || original.indexOf(m.find, at + 1) >= 0) {
      console.log(`| ${m.what} | ${m.file} | clause not found once: update test/mutation/sqlGuards.ts |`);
      bad++;
      continue;
    }
    writeFileSync(path, original.slice(0, at) + m.replace + original.slice(at + m.find.length));
    const { failed } = testsFail(m.tests);
    writeFileSync(path, original);
    console.log(`| ${m.what} | ${m.file} | ${failed ? "killed" : "SURVIVED"} |`);
    if (!failed) bad++;
  }
  rmSync(SANDBOX, { recursive: true, force: true });
  return bad === 0 ? 0 : 1;
}

process.exitCode = main();
