// The harness's own driver (test/wiring/harness.test.ts): reports what a function process sees.
import { serve } from "../support/rpc.mjs";

serve(async (kind, payload) => {
  if (kind === "env") return { version: process.version, env: process.env, cwd: process.cwd(), bundleDir: process.argv[2] };
  if (kind === "fail") throw new TypeError(`failed as asked: ${payload}`);
  throw new Error(`echo driver: unknown kind ${kind}`);
});
