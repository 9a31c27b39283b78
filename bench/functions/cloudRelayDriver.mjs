// bench:cloudrelay's function process (bench/cloudRelay.ts): the AWS relay bundle, loaded on
// Node 22 the way Lambda loads it (the `handler` export of <bundle>/index.mjs), and invoked as
// the schedule invokes it, with a context whose remaining time counts down from the function's
// timeout. Like test/wiring/drivers/aws.mjs, plus what the bench reads from inside the process:
// - `pid`: this process's id, so the bench can put it under the cloud's CPU share (a cgroup);
// - `invoke` answers the handler's summary with the invocation's CPU time and the peak RSS;
// - `expire` brings a listening run's deadline to now: it stops claiming, finishes what it holds
//   and returns, as it would at the end of its budget (the bench sends it once the backlog is out).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { serve } from "../../test/wiring/support/rpc.mjs";

const [bundleDir, timeoutSeconds] = process.argv.slice(2);
const file = join(bundleDir, "index.mjs");
if (!existsSync(file)) throw new Error(`cloudRelayDriver: ${file} does not exist (run npm run build:functions)`);
const { handler } = await import(pathToFileURL(file).href);
if (typeof handler !== "function") throw new Error(`cloudRelayDriver: ${file} exports no handler`);

// A clean exit on the bench's SIGTERM, so --cpu-prof (BENCH_CLOUDRELAY_NODE_OPTIONS) writes its profile.
process.on("SIGTERM", () => process.exit(0));

let deadline = 0;
let requests = 0;
serve(async (kind) => {
  if (kind === "pid") return process.pid;
  if (kind === "expire") {
    deadline = Date.now();
    return null;
  }
  if (kind !== "invoke") throw new Error(`cloudRelayDriver: unknown kind ${kind}`);
  deadline = Date.now() + Number(timeoutSeconds) * 1000;
  const context = { functionName: "bench-relay", awsRequestId: `bench-${++requests}`, getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()) };
  const cpu = process.cpuUsage();
  const started = performance.now();
  const summary = await handler({}, context);
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { summary, wallMs, cpuMs: (used.user + used.system) / 1000, maxRssMb: process.resourceUsage().maxRSS / 1024 };
});
