// The GCP wiring test's driver: starts one Cloud Run function the way its runtime does, the
// Functions Framework (`functions-framework --target=<entry_point> --signature-type=http`) over
// the bundle directory, in a child on this Node 22 with exactly this process's environment, on a
// free port. The framework is the copy the buildpack would install from the bundle's
// package.json (here: linked into <bundleDir>/node_modules by the test). Answers `url`, and
// `stop`. Its output (the function's logs) is this process's output.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { connect, createServer } from "node:net";
import { dirname, join } from "node:path";
import { serve } from "../support/rpc.mjs";

const [bundleDir, target] = process.argv.slice(2);
if (!bundleDir || !target) throw new Error("usage: gcp.mjs <bundleDir> <entry_point>");

const freePort = () => new Promise((resolve, reject) => {
  const server = createServer();
  server.once("error", reject);
  server.listen(0, "127.0.0.1", () => { const { port } = server.address(); server.close(() => resolve(port)); });
});
const answers = (port) => new Promise((resolve) => {
  const socket = connect(port, "127.0.0.1", () => { socket.end(); resolve(true); });
  socket.once("error", () => resolve(false));
});

// Resolved from the bundle, as the bundle's own `import "@google-cloud/functions-framework"` is;
// `main.js` (the package's `functions-framework` bin) sits beside its index.
const main = join(dirname(createRequire(join(bundleDir, "package.json")).resolve("@google-cloud/functions-framework")), "main.js");
const port = await freePort();
const child = spawn(process.execPath, [main, `--target=${target}`, "--signature-type=http", `--source=${bundleDir}`, `--port=${port}`], {
  cwd: bundleDir,
  env: process.env,
  stdio: ["ignore", "inherit", "inherit"],
});
let exited;
child.once("exit", (code, signal) => { exited = `${code ?? signal}`; });
for (let i = 0; !(await answers(port)); i++) {
  if (exited !== undefined) throw new Error(`the Functions Framework exited (${exited}) before serving ${target}`);
  if (i > 300) throw new Error(`the Functions Framework did not listen within 30 s for ${target}`);
  await new Promise((r) => setTimeout(r, 100));
}
process.once("SIGTERM", () => { child.kill("SIGTERM"); process.exit(0); });

serve(async (kind) => {
  if (kind === "url") return { url: `http://127.0.0.1:${port}`, node: process.version };
  if (kind === "exited") return { exited: exited ?? null };
  throw new Error(`gcp driver: unknown kind ${kind}`);
});
