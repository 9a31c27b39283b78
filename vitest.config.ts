import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more forks than that only adds contention to timing-sensitive lease tests.
    pool: "forks",
    maxWorkers: 2,
    // Secrets are stored encrypted (docs/secrets.md): every test process and the processes it
    // starts share one key, as the processes of one deployment do. A test key, never a real one.
    env: { ENCRYPTION_KEYS: process.env.ENCRYPTION_KEYS ?? "test1:dGVzdCBrZXkgb2YgdGhlIHRlc3Qgc3VpdGUgb25seSE=" },
  },
});
