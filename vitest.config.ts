import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more forks than that only adds contention to timing-sensitive lease tests.
    pool: "forks",
    maxWorkers: 2,
  },
});
