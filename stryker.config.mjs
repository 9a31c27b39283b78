// @ts-check
/**
 * Stryker (mutation testing), shared settings. `npm run test:mutation` runs it once per module,
 * each against only the tests that cover it (test/mutation/modules.ts); see docs/testing.md.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  // The vitest runner, corrected: a mutant that breaks a test file's loading counts as killed.
  testRunner: "vitest-load-failures-kill",
  plugins: ["@stryker-mutator/vitest-runner", "./test/mutation/vitestRunner.mjs"],
  // Only the tests that cover the module (MUTATION_TEST_FILES), related-file lookup off.
  vitest: { configFile: "test/mutation/vitest.config.ts", related: false },
  coverageAnalysis: "perTest",
  // Two cores, shared: one test runner by default (STRYKER_CONCURRENCY=2 when the machine is free).
  concurrency: Number(process.env.STRYKER_CONCURRENCY ?? 1),
  // Only what the unit tests load is copied to the sandbox (examples/: the order machine) (cdktf.out, bench, docs are large and unused).
  ignorePatterns: ["/*", "!/shared", "!/examples", "!/test", "!/package.json", "!/tsconfig.json", "!/vitest.config.ts"],
  reporters: ["clear-text", "progress", "json"],
  // Survivors are listed; which test killed which mutant is in the JSON report.
  clearTextReporter: { allowColor: false, logTests: false, reportTests: false },
  jsonReporter: { fileName: process.env.MUTATION_REPORT ?? ".scratch/mutation/mutation.json" },
  // Under .scratch/ (git-ignored), like the reports the driver writes.
  tempDirName: ".scratch/stryker-tmp",
  cleanTempDir: "always",
  timeoutMS: 10000,
};
