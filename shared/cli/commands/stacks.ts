/**
 * `webhooks synth|deploy <cloud>` and `webhooks compare`: thin wrappers over the project's own
 * scripts (`npm run synth`, `stacks/preflight.ts`, `cdktf deploy`, `stacks/compare.ts`), run with
 * the terminal attached so their output and prompts reach the user unchanged.
 */
import { spawn } from "node:child_process";
import { access } from "node:fs/promises";
import { resolve as resolvePath } from "node:path";
import { fileURLToPath } from "node:url";
import { parseTraffic } from "../../../stacks/compareArgs.js";
import { OperationError, UsageError, type Command, type Invocation } from "../command.js";

export const CLOUDS = ["aws", "azure", "gcp"] as const;

/** The project root: three levels above this file (shared/cli/commands). */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const TSX = `${ROOT}node_modules/tsx/dist/cli.mjs`;

function cloudArg(inv: Invocation, required: boolean): string | undefined {
  const cloud = inv.positionals[0];
  if (cloud === undefined) {
    if (required) throw new UsageError(`Name the cloud: one of ${CLOUDS.join(", ")}.`);
    return undefined;
  }
  if (!(CLOUDS as readonly string[]).includes(cloud)) throw new UsageError(`Unknown cloud ${JSON.stringify(cloud)}: use one of ${CLOUDS.join(", ")}.`);
  return cloud;
}

function noJson(inv: Invocation, name: string): void {
  if (inv.json) throw new UsageError(`--json is not available for \`webhooks ${name}\`: it prints the tools' own output.`);
}

async function requireFile(relative: string, what: string): Promise<string> {
  const path = ROOT + relative;
  try {
    await access(path);
  } catch {
    throw new OperationError(`${relative} is missing from this checkout, so ${what} cannot run. Update the project (git pull) or run from its root.`);
  }
  return path;
}

/** Runs a child with the terminal attached; resolves to its exit code. */
function run(command: string, args: string[], env: Record<string, string | undefined>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: "inherit", env: { ...process.env, ...env, CHECKPOINT_DISABLE: "1" } });
    child.on("error", (error) => reject(new OperationError(`Could not run ${command}: ${error.message}`, { cause: error })));
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

export const synth: Command = {
  name: "synth",
  summary: "Synthesize the Terraform JSON of the stacks. Offline: no credentials, no terraform binary.",
  usage: "synth [aws|azure|gcp] [--build]",
  help: `Runs \`npm run synth\` (cdktf synth), which writes every stack to cdktf.out/stacks/.
The stacks embed the built functions: run with --build (npm run build:functions first), or set
WEBHOOKS_SYNTH_PLACEHOLDERS=1 to synthesize with placeholder code (for checks only).
With a cloud, prints where that cloud's stack was written.

Options:
  --build   build the functions first (npm run build:functions)`,
  options: { build: { type: "boolean", default: false } },
  positionals: [0, 1],
  usesApi: false,
  async run(inv) {
    noJson(inv, "synth");
    const cloud = cloudArg(inv, false);
    await requireFile("cdktf.json", "synth");
    await requireFile("stacks/main.ts", "synth");
    if (inv.values.build) {
      inv.io.stderr("building the functions (npm run build:functions)…\n");
      const built = await run("npm", ["run", "--silent", "build:functions"], inv.io.env);
      if (built !== 0) throw new OperationError(`Building the functions failed (exit ${built}); its output above says why.`);
    }
    inv.io.stderr("synthesizing (npm run synth)…\n");
    const code = await run("npm", ["run", "--silent", "synth"], inv.io.env);
    if (code !== 0) throw new OperationError(`synth failed (exit ${code}); its output above says why.`);
    inv.io.stderr(`Synthesized into cdktf.out/stacks/${cloud ? `${stackName(cloud)}/cdk.tf.json` : ""}\n`);
  },
};

export const deploy: Command = {
  name: "deploy",
  summary: "Check the prerequisites of a cloud (terraform or tofu, credentials, built functions), then `cdktf deploy` its stack.",
  usage: "deploy <aws|azure|gcp> [--auto-approve]",
  help: `Runs stacks/deploy.ts <cloud> (the same as \`npm run deploy -- <cloud>\`): its preflight names
whatever is missing (binary, credentials, built functions) before anything is created, then it
runs cdktf deploy for that cloud's stack.

Options:
  --auto-approve   pass --auto-approve to cdktf deploy (no interactive confirmation)`,
  options: { "auto-approve": { type: "boolean", default: false } },
  positionals: [1, 1],
  usesApi: false,
  async run(inv) {
    noJson(inv, "deploy");
    const cloud = cloudArg(inv, true)!;
    const script = await requireFile("stacks/deploy.ts", "deploy");
    const code = await run(process.execPath, [TSX, script, cloud, ...(inv.values["auto-approve"] ? ["--auto-approve"] : [])], inv.io.env);
    if (code !== 0) throw new OperationError(`Deploying ${cloud} failed (exit ${code}): fix what is reported above, then run \`webhooks deploy ${cloud}\` again.`);
  },
};

/** The cdktf stack of a cloud (as named in stacks/app.ts). */
export function stackName(cloud: string): string {
  return `webhooks-${cloud}`;
}

export const compare: Command = {
  name: "compare",
  summary: "Synthesize the three stacks and print the side-by-side comparison derived from them.",
  usage: "compare [--traffic <n>]... [--json] [--markdown <path>]",
  help: `Runs stacks/compare.ts (the same as \`npm run compare\`). Without options it prints the table
and rewrites docs/comparison.md and its chart; with --traffic or --json it only prints.

Options:
  --traffic <n>       price this volume, webhooks a month in each direction (25M, 500k,
                      2000000); repeat for several tiers. Default: 1 M, 10 M and 100 M
  --json              print the comparison as JSON on stdout, nothing else (amounts in USD
                      a month: the JSON says so in currency and period)
  --markdown <path>   write the Markdown (and its chart, <path>-cost.svg) there`,
  options: { markdown: { type: "string" }, traffic: { type: "string", multiple: true } },
  usesApi: false,
  async run(inv) {
    const traffic = (inv.values.traffic as string[] | undefined) ?? [];
    // Checked here, so a typo is refused before the stacks are synthesized.
    for (const t of traffic) {
      try {
        parseTraffic(t);
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
    }
    const script = await requireFile("stacks/compare.ts", "compare");
    const target = inv.values.markdown as string | undefined;
    const args = [...traffic.flatMap((t) => ["--traffic", t]), ...(inv.json ? ["--json"] : []), ...(target ? ["--markdown", resolvePath(inv.io.cwd, target)] : [])];
    const code = await run(process.execPath, [TSX, script, ...args], inv.io.env);
    if (code !== 0) throw new OperationError(`compare failed (exit ${code}); its output above says why.`);
  },
};
