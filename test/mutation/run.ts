/**
 * `npm run test:mutation [-- [--ci] [file[:lines]]…]`: runs Stryker once per module of
 * test/mutation/modules.ts, each against only its own tests, one module at a time (the machine
 * has two cores, shared), then prints the table docs/testing.md shows and every survivor.
 * Exits 1 when a module scores below MIN_SCORE or a run fails.
 *
 *   npm run test:mutation                                        every module
 *   npm run test:mutation -- --ci                                the small CI set
 *   npm run test:mutation -- shared/inbound/verify/hmac.ts       one module
 *   npm run test:mutation -- shared/inbound/verify/hmac.ts:20-30 some lines of it
 *   npm run test:mutation -- --sql                               the lease and completion guards' SQL mutants
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { MIN_SCORE, MODULES, type MutationModule } from "./modules.js";

const REPORTS = ".scratch/mutation";
const STRYKER = "node_modules/@stryker-mutator/core/bin/stryker.js";

interface ReportMutant {
  id: string;
  mutatorName: string;
  replacement?: string;
  status: "Killed" | "Survived" | "NoCoverage" | "Timeout" | "CompileError" | "RuntimeError" | "Ignored" | "Pending";
  statusReason?: string;
  location: { start: { line: number; column: number } };
}

interface Row {
  file: string;
  killed: number;
  survived: number;
  noCoverage: number;
  ignored: number;
  score: number;
  survivors: string[];
  ignoredList: string[];
}

function selection(args: string[]): Array<{ module: MutationModule; mutate: string }> {
  const named = args.filter((a) => !a.startsWith("--"));
  if (named.length === 0) {
    const set = args.includes("--ci") ? MODULES.filter((m) => m.ci) : MODULES;
    return set.map((module) => ({ module, mutate: module.file }));
  }
  return named.map((mutate) => {
    const file = mutate.replace(/:[\d:-]+$/, "");
    const module = MODULES.find((m) => m.file === file);
    if (!module) throw new Error(`${file} is not in test/mutation/modules.ts; add it there with the tests that cover it.`);
    return { module, mutate };
  });
}

function runStryker(module: MutationModule, mutate: string, report: string): void {
  const result = spawnSync(process.execPath, [STRYKER, "run", "stryker.config.mjs", "--mutate", mutate], {
    stdio: "inherit",
    env: {
      ...process.env,
      MUTATION_TEST_FILES: module.tests.join(","),
      MUTATION_REPORT: report,
      // Stryker's runner uses worker threads, where a test cannot change the zone: start them in
      // one that is not UTC, so a date read in local time is noticed (retryPolicy's GMT test).
      TZ: process.env.TZ ?? "America/New_York",
    },
  });
  if (result.status !== 0) throw new Error(`Stryker failed on ${mutate} (exit ${result.status ?? result.signal}); its output is above.`);
}

function rowOf(file: string, report: string): Row {
  const json = JSON.parse(readFileSync(report, "utf8")) as { files: Record<string, { mutants: ReportMutant[] }> };
  const mutants = Object.values(json.files).flatMap((f) => f.mutants);
  const count = (...statuses: ReportMutant["status"][]) => mutants.filter((m) => statuses.includes(m.status)).length;
  const killed = count("Killed", "Timeout");
  const survived = count("Survived");
  const noCoverage = count("NoCoverage");
  const describe = (m: ReportMutant) => `${file}:${m.location.start.line}:${m.location.start.column} ${m.mutatorName} → ${JSON.stringify(m.replacement ?? "")}`;
  return {
    file,
    killed,
    survived,
    noCoverage,
    ignored: count("Ignored"),
    score: killed + survived + noCoverage === 0 ? 100 : (100 * killed) / (killed + survived + noCoverage),
    survivors: mutants.filter((m) => m.status === "Survived" || m.status === "NoCoverage").map((m) => `${describe(m)} (${m.status})`),
    ignoredList: mutants.filter((m) => m.status === "Ignored").map((m) => `${describe(m)}: ${m.statusReason ?? ""}`),
  };
}

function main(): number {
  // The SQL guards' hand-made mutants (Stryker mutates no SQL): test/mutation/sqlGuards.ts.
  if (process.argv.includes("--sql")) {
    return spawnSync(process.execPath, ["--import", "tsx", "test/mutation/sqlGuards.ts"], { stdio: "inherit" }).status ?? 1;
  }
  mkdirSync(REPORTS, { recursive: true });
  const rows: Row[] = [];
  for (const { module, mutate } of selection(process.argv.slice(2))) {
    const report = join(REPORTS, `${basename(module.file, ".ts")}.json`);
    console.log(`\n== ${mutate} against ${module.tests.join(", ")}`);
    runStryker(module, mutate, report);
    rows.push(rowOf(module.file, report));
  }
  console.log("\n| file | killed | survived | no coverage | equivalent (disabled) | score |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const r of rows) console.log(`| ${r.file} | ${r.killed} | ${r.survived} | ${r.noCoverage} | ${r.ignored} | ${r.score.toFixed(1)} % |`);
  for (const r of rows) for (const s of r.survivors) console.log(`survivor: ${s}`);
  for (const r of rows) for (const s of r.ignoredList) console.log(`equivalent: ${s}`);
  const low = rows.filter((r) => r.score < MIN_SCORE);
  for (const r of low) console.error(`${r.file}: mutation score ${r.score.toFixed(1)} % is below ${MIN_SCORE} %: kill its survivors with tests, or mark an equivalent one with a Stryker disable comment and the reason.`);
  return low.length === 0 ? 0 : 1;
}

process.exitCode = main();
