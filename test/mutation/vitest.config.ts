/**
 * The project's vitest settings, restricted to the test files named in MUTATION_TEST_FILES
 * (comma-separated): Stryker runs each module against only the tests that cover it. Stryker's own
 * `--testFiles` is not used: with it, 9.6 activates module-level ("static") mutants only after the
 * module has loaded, so they all survive.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import base from "../../vitest.config.js";

const files = (process.env.MUTATION_TEST_FILES ?? "").split(",").map((f) => f.trim()).filter(Boolean);
if (files.length === 0) throw new Error("MUTATION_TEST_FILES is empty: name the test files to run, comma-separated (npm run test:mutation does).");

export default defineConfig({
  ...base,
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: { ...base.test, include: files },
});
