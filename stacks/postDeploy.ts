/**
 * What `npm run deploy` does after `cdktf deploy` succeeded: the steps Terraform cannot make
 * itself. Today that is GCP's migrate step: Terraform cannot start a Cloud Run function, so the
 * stack creates a Cloud Scheduler job for it (`<prefix>-migrate`), and this runs that job once and
 * waits for its outcome. AWS runs its migrate function inside `cdktf deploy` (an
 * `aws_lambda_invocation`), Azure's runs when its Function App starts (a timer with runOnStartup).
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import type { Cloud } from "./artifacts.js";
import type { StackConfig } from "./config.js";

export type Exec = (command: string, args: string[]) => Pick<SpawnSyncReturns<string>, "status" | "stdout" | "stderr" | "error">;

export const defaultExec: Exec = (command, args) => spawnSync(command, args, { encoding: "utf8" });

export interface PostDeployOptions {
  exec?: Exec;
  /** Between two looks at the job. Default: 5 000 ms. */
  pollMs?: number;
  /** Give up waiting after this long. Default: 10 minutes. */
  timeoutMs?: number;
  log?: (line: string) => void;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

export interface PostDeployResult {
  ok: boolean;
  /** What was done, or what went wrong and what to do. */
  message: string;
}

interface JobState {
  lastAttemptTime?: string;
  status?: { code?: number; message?: string };
}

/** Runs the cloud's post-deploy steps; never throws for a failed step (the message says what to do). */
export async function postDeploy(cloud: Cloud, config: StackConfig, options: PostDeployOptions = {}): Promise<PostDeployResult> {
  if (cloud !== "gcp") return { ok: true, message: cloud === "aws" ? "migrate ran inside cdktf deploy (aws_lambda_invocation)" : "migrate runs when the migrate Function App starts (timer, runOnStartup)" };
  const exec = options.exec ?? defaultExec;
  const log = options.log ?? ((line) => console.log(line));
  const now = options.now ?? (() => new Date());
  const sleep = options.sleep ?? ((ms) => new Promise<void>((r) => setTimeout(r, ms)));
  const job = `${config.namePrefix}-migrate`;
  const where = [`--location=${config.gcpRegion}`, `--project=${config.gcpProject}`];
  const manual = `gcloud scheduler jobs run ${job} ${where.join(" ")}`;

  const started = now();
  log(`migrate step: ${manual}`);
  const run = exec("gcloud", ["scheduler", "jobs", "run", job, ...where]);
  if (run.error || run.status !== 0) {
    return { ok: false, message: `could not start the migrate job: ${(run.error?.message ?? run.stderr ?? "").trim()}\nRun it yourself once gcloud works: ${manual}` };
  }
  const deadline = started.getTime() + (options.timeoutMs ?? 10 * 60_000);
  for (;;) {
    await sleep(options.pollMs ?? 5_000);
    const described = exec("gcloud", ["scheduler", "jobs", "describe", job, ...where, "--format=json"]);
    if (described.status === 0) {
      let state: JobState;
      try {
        state = JSON.parse(described.stdout) as JobState;
      } catch {
        return { ok: false, message: `gcloud scheduler jobs describe ${job} printed no JSON; check the job in the console, or run: ${manual}` };
      }
      if (state.lastAttemptTime && new Date(state.lastAttemptTime).getTime() >= started.getTime()) {
        const code = state.status?.code;
        if (code !== undefined && code !== 0) {
          return { ok: false, message: `the migrate function failed (code ${code}): ${state.status?.message ?? "no message"}\nIts log: gcloud functions logs read ${job} --gen2 ${where.slice(0, 1).join(" ").replace("--location", "--region")} ${where[1]}; then run again: ${manual}` };
        }
        return { ok: true, message: `migrate ran at ${state.lastAttemptTime}: migrations applied and webhooks_app up to date` };
      }
    }
    if (now().getTime() > deadline) return { ok: false, message: `the migrate job did not report within ${Math.round((options.timeoutMs ?? 600_000) / 1000)} s; check it with: gcloud scheduler jobs describe ${job} ${where.join(" ")}` };
  }
}
