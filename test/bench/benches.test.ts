/**
 * Every `npm run bench:*` the README quotes runs to its table on a fresh machine (issue 27, item
 * 4b, Must-show 5), with a tiny load: this checks that each runs and prints its table, not what it
 * measures (no timing is asserted). "Fresh machine": no ENCRYPTION_KEYS in the environment (the
 * test processes have one; a newcomer's shell has none). And a bench whose contender fails exits
 * non-zero saying why: bench:ingest, whose server process died, used to exit 0 with no table.
 *
 * The BENCH_ONLY variants of bench:outbound (flow, enqueue) and BENCH_FUNCTIONS_BASELINE build or
 * migrate a second tree from git; they are left out here to keep this file to a couple of minutes.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** `npm run -s <script>` with the machine's environment minus the test suite's own settings. */
function runScript(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base: Record<string, string | undefined> = { ...process.env };
  for (const k of Object.keys(base)) if (k === "ENCRYPTION_KEYS" || k.startsWith("VITEST") || k === "NODE_ENV" || k === "TEST") delete base[k];
  const child = spawn("npm", ["run", "-s", script], { cwd: ROOT, env: { ...base, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => { stdout += c.toString(); });
  child.stderr.on("data", (c: Buffer) => { stderr += c.toString(); });
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

/** printTable's rule under the header (bench/table.ts): dashes in columns. */
const RULE = /^-+( {2}-+)+$/m;

const benches: { script: string; env: Record<string, string>; table: RegExp[] }[] = [
  {
    script: "bench:outbound",
    env: { BENCH_EVENTS: "200", BENCH_ROUNDS: "1", BENCH_CEILING_SECONDS: "1", BENCH_CONNECTIONS: "8" },
    table: [RULE, /graphile-worker/],
  },
  {
    script: "bench:isolation",
    // The first two pairs: the at-scale ones (1 000 endpoints, one and four relays) run the same code
    // with more servers and took 150 s more here even at this load.
    env: { BENCH_TIMEOUT_MS: "300", BENCH_BACKLOG: "10", BENCH_HEALTHY_EVENTS: "5", BENCH_SECONDS: "1", BENCH_PAIRS: "1,2" },
    table: [RULE, /90 healthy \+ 10 hanging endpoints/],
  },
  {
    script: "bench:ratelimit",
    env: { BENCH_RATES: "50", BENCH_EVENTS: "30", BENCH_RELAYS: "1" },
    table: [RULE, /share of the limit/, /^50\/s +1 +30 /m],
  },
  {
    script: "bench:ordering",
    env: { BENCH_BLOCKED: "20", BENCH_WAITING: "1", BENCH_EVENTS: "40", BENCH_KEYS: "5", BENCH_ROUNDS: "1", BENCH_BATCH: "10" },
    table: [RULE, /claim latency, median/],
  },
  {
    script: "bench:ingest",
    env: { BENCH_EVENTS: "100", BENCH_ROUNDS: "1", BENCH_HALF_SECONDS: "1", BENCH_HALF_RUNS: "1", BENCH_CONNECTIONS: "4", BENCH_POOL: "2" },
    table: [RULE, /× raw insert/, /ingest: .*× the raw insert rate/],
  },
  {
    script: "bench:queues",
    env: { BENCH_QUEUE_MESSAGES: "10", BENCH_QUEUE_ROUNDS: "1" },
    table: [/adapter÷bare/, /^local \(PostgreSQL server\) +send/m, /^SQS \(moto_server\) +receive/m, /^Pub\/Sub \(emulator\) +send/m, /^Service Bus \(AMQP test peer\) +receive/m],
  },
  {
    script: "bench:functions",
    env: { BENCH_FUNCTIONS_RUNS: "1", BENCH_FUNCTIONS_ONLY: "aws/relay" },
    table: [/^\| aws\/relay +\|/m, /^\|-+\|/m],
  },
  {
    // One profile (AWS, under its CPU quota), scheduled mode only; no results file (the committed one stays as measured).
    script: "bench:cloudrelay",
    env: { BENCH_CLOUDRELAY_EVENTS: "30", BENCH_CLOUDRELAY_ROUNDS: "1", BENCH_CLOUDRELAY_MODES: "scheduled", BENCH_CLOUDRELAY_ONLY: "aws", BENCH_CLOUDRELAY_RESULTS: "" },
    table: [RULE, /^aws: memory_size \d+ MB \/ 1769 MB per vCPU +scheduled/m, /no results file written/],
  },
  {
    // Three kinds (moto, the Service Bus test peer, RabbitMQ): the others run the same code against their stand-ins.
    script: "bench:destinations",
    env: { BENCH_MESSAGES: "20", BENCH_ROUNDS: "1", BENCH_KINDS: "sqs,servicebus,rabbitmq" },
    table: [RULE, /relay ÷ SDK/, /^sqs \(moto\), 20 /m, /^servicebus \(test peer\), 20 /m, /^rabbitmq \(local broker\), 20 /m],
  },
];

describe("the benchmarks the README quotes", () => {
  it("runs every bench the README quotes, each a script of package.json", async () => {
    const { readFile } = await import("node:fs/promises");
    const readme = await readFile(new URL("../../README.md", import.meta.url), "utf8");
    const scripts = Object.keys((JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as { scripts: Record<string, string> }).scripts);
    const named = [...new Set([...readme.matchAll(/npm run (bench:[a-z]+)/g)].map((m) => m[1]!))];
    for (const script of named) {
      expect(scripts, `the README quotes npm run ${script}`).toContain(script);
      expect(benches.map((b) => b.script), `the README quotes npm run ${script}: give it a tiny-load entry in test/bench/benches.test.ts`).toContain(script);
    }
    expect(named.length).toBeGreaterThanOrEqual(6);
  });

  for (const { script, env, table } of benches) {
    it(`${script} runs to its table with a tiny load and exits 0`, async () => {
      const run = await runScript(script, env);
      const said = `${script} exited ${run.code}\n--- stdout ---\n${run.stdout.slice(-3000)}\n--- stderr ---\n${run.stderr.slice(-3000)}`;
      expect(run.code, said).toBe(0);
      for (const pattern of table) expect(run.stdout, said).toMatch(pattern);
    }, 240_000);
  }

  it("a bench whose contender fails exits non-zero saying why (bench:ingest, its server unable to start)", async () => {
    // A key the server refuses at start: its process exits before listening.
    const run = await runScript("bench:ingest", { ENCRYPTION_KEYS: "not-a-key", BENCH_EVENTS: "10", BENCH_ROUNDS: "1" });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/bench:ingest FAILED: .*the ingest server process exited before listening/);
    expect(run.stderr).toMatch(/ENCRYPTION_KEYS/); // the server's own reason, above
    expect(run.stdout).not.toMatch(RULE);
  }, 120_000);
});
