/**
 * What `npm run deploy` does after `cdktf deploy` succeeded: the migrate step, judged by the
 * migrate function's own answer on every cloud (what it applied, or its error), never by a
 * scheduler's or a platform's bookkeeping about an attempt.
 *
 * - AWS: nothing left to do. The stack's `aws_lambda_invocation` called the migrate function
 *   inside `cdktf deploy` and the provider fails the apply when the function returns an error.
 * - GCP: Terraform cannot call a Cloud Run function, so this calls it: its URL from
 *   `gcloud functions describe`, an identity token from `gcloud auth print-identity-token` (the
 *   deployer needs run.routes.invoke, which Owner, Editor and Cloud Run Invoker have), a POST,
 *   and the answer: 200 with what was applied, or 500 with the error. Cloud Scheduler's
 *   `lastAttemptTime` is when the last attempt *started*, and its `status` belongs to the last
 *   *finished* one, so a scheduler job cannot say whether this deploy's run succeeded.
 * - Azure: the migrate app's start-up timer runs it, but a timer answers no one; the app also
 *   serves `POST /api/migrate` (admin key only, functions/azure/migrate.ts), which this calls with
 *   the app's master key from `az functionapp keys list`.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import type { Cloud } from "./artifacts.js";
import type { StackConfig } from "./config.js";

export type Exec = (command: string, args: string[]) => Pick<SpawnSyncReturns<string>, "status" | "stdout" | "stderr" | "error">;

export const defaultExec: Exec = (command, args) => spawnSync(command, args, { encoding: "utf8" });

export interface PostDeployOptions {
  exec?: Exec;
  fetch?: typeof fetch;
  /** How long to wait for the migrate function's answer. Default: 10 minutes. */
  timeoutMs?: number;
  log?: (line: string) => void;
}

export interface PostDeployResult {
  ok: boolean;
  /** What was done, or what went wrong and what to do. */
  message: string;
}

/** What the migrate functions answer (shared/cloud/prepareDatabase.ts's PrepareResult, or an error). */
interface MigrateAnswer {
  applied?: unknown;
  appRole?: unknown;
  roleCreated?: unknown;
  error?: { code?: string; message?: string };
}

/** The HTTP request the migrate step makes on a cloud where Terraform cannot make it. */
interface MigrateCall {
  url: string;
  headers: Record<string, string>;
  /** The command that makes the same call by hand. */
  manual: string;
  /** Where its log is. */
  logs: string;
}

/** Runs the cloud's post-deploy step; never throws (the message says what to do). */
export async function postDeploy(cloud: Cloud, config: StackConfig, options: PostDeployOptions = {}): Promise<PostDeployResult> {
  if (cloud === "aws") return { ok: true, message: "migrate ran inside cdktf deploy (aws_lambda_invocation, which fails the apply if the function returns an error)" };
  const exec = options.exec ?? defaultExec;
  const log = options.log ?? ((line) => console.log(line));
  const call = cloud === "gcp" ? gcpCall(config, exec) : azureCall(config, exec);
  if ("problem" in call) return { ok: false, message: call.problem };
  log(`migrate step: POST ${call.url}`);
  return callMigrate(call, options.fetch ?? fetch, options.timeoutMs ?? 10 * 60_000);
}

function run(exec: Exec, command: string, args: string[]): { out: string } | { problem: string } {
  const result = exec(command, args);
  if (result.error || result.status !== 0) return { problem: `\`${command} ${args.join(" ")}\` failed: ${(result.error?.message ?? result.stderr ?? "").trim() || `exit ${result.status}`}` };
  return { out: result.stdout.trim() };
}

function gcpCall(config: StackConfig, exec: Exec): MigrateCall | { problem: string } {
  const fn = `${config.namePrefix}-migrate`;
  const where = [`--region=${config.gcpRegion}`, `--project=${config.gcpProject}`];
  const uri = run(exec, "gcloud", ["functions", "describe", fn, "--gen2", ...where, "--format=value(serviceConfig.uri)"]);
  if ("problem" in uri) return { problem: `${uri.problem}\nThe migrate step did not run. Once gcloud works, run \`npm run deploy -- gcp\` again, or: gcloud functions call ${fn} --gen2 ${where.join(" ")}` };
  if (!uri.out.startsWith("https://")) return { problem: `gcloud functions describe ${fn} gave no URL (${JSON.stringify(uri.out)}): is the function deployed? The migrate step did not run.` };
  const token = run(exec, "gcloud", ["auth", "print-identity-token"]);
  if ("problem" in token) return { problem: `${token.problem}\nThe migrate step did not run: log in with \`gcloud auth login\`, then run \`npm run deploy -- gcp\` again.` };
  return {
    url: uri.out,
    headers: { authorization: `Bearer ${token.out}` },
    manual: `gcloud functions call ${fn} --gen2 ${where.join(" ")}`,
    logs: `gcloud functions logs read ${fn} --gen2 ${where.join(" ")}`,
  };
}

function azureCall(config: StackConfig, exec: Exec): MigrateCall | { problem: string } {
  const app = `${config.namePrefix}-migrate`;
  const where = ["--resource-group", `${config.namePrefix}-rg`, "--name", app];
  const host = run(exec, "az", ["functionapp", "show", ...where, "--query", "defaultHostName", "--output", "tsv"]);
  const retry = `Restarting the app runs it too: az functionapp restart ${where.join(" ")} (then read its log).`;
  if ("problem" in host) return { problem: `${host.problem}\nCould not confirm the migrate step (its start-up timer may have run it). ${retry}` };
  const key = run(exec, "az", ["functionapp", "keys", "list", ...where, "--query", "masterKey", "--output", "tsv"]);
  if ("problem" in key) return { problem: `${key.problem}\nCould not confirm the migrate step: reading the app's master key needs Contributor on ${app}. ${retry}` };
  const url = `https://${host.out}/api/migrate`;
  return {
    url,
    headers: { "x-functions-key": key.out },
    manual: `curl -X POST -H "x-functions-key: $(az functionapp keys list ${where.join(" ")} --query masterKey -o tsv)" ${url}`,
    logs: `az webapp log tail ${where.join(" ")}`,
  };
}

async function callMigrate(call: MigrateCall, fetchImpl: typeof fetch, timeoutMs: number): Promise<PostDeployResult> {
  const again = `Run it again: ${call.manual}`;
  let response: Response;
  try {
    response = await fetchImpl(call.url, {
      method: "POST",
      headers: { ...call.headers, "content-type": "application/json" },
      body: JSON.stringify({ source: "deploy", step: "migrate" }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const reason = (error as Error).name === "TimeoutError" ? `no answer within ${Math.round(timeoutMs / 1000)} s` : (error as Error).message;
    return { ok: false, message: `the migrate function could not be called (${reason}); whether it ran is unknown. Its log: ${call.logs}\n${again}` };
  }
  const text = await response.text();
  let answer: MigrateAnswer | undefined;
  try {
    answer = JSON.parse(text) as MigrateAnswer;
  } catch {
    answer = undefined;
  }
  if (response.status === 401 || response.status === 403) {
    return { ok: false, message: `the migrate function refused the call (HTTP ${response.status}): the deployer needs permission to invoke it (GCP: roles/run.invoker on the function; Azure: the app's master key). ${again}` };
  }
  if (response.ok && answer && Array.isArray(answer.applied) && typeof answer.appRole === "string") {
    const applied = answer.applied.length ? `applied ${answer.applied.join(", ")}` : "no migration to apply";
    return { ok: true, message: `migrate answered: ${applied}; ${answer.appRole} ${answer.roleCreated === true ? "created" : "up to date"}` };
  }
  const said = answer?.error?.message ?? (text.slice(0, 500) || "an empty body");
  return { ok: false, message: `the migrate function failed (HTTP ${response.status}): ${said}\nIts log: ${call.logs}\n${again}` };
}
