/**
 * The deploy's post-step: the migrate step judged by the migrate function's own answer. Two TEST
 * PEERS stand in for what does not run here: the clouds' CLIs (`exec`, answering as `gcloud` and
 * `az` do for the commands used; it does not model their authentication), and the deployed
 * migrate function, a local HTTP server answering as functions/gcp/migrateHttp.ts's migrateHttp and
 * functions/azure/migrate.ts's httpHandler do (200 with the PrepareResult, 500 with the error);
 * it does not model Cloud Run's or the Functions host's own authentication.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existingGeneratedSecrets } from "../../stacks/gcp/existingSecrets.js";
import { postDeploy, type Exec } from "../../stacks/postDeploy.js";
import { testConfig } from "./synthFixture.js";

interface Seen { method?: string; url?: string; headers: IncomingMessage["headers"]; body: string }
let answer: (res: ServerResponse) => void;
const seen: Seen[] = [];
let base: string;
const server = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    seen.push({ method: req.method, url: req.url, headers: req.headers, body });
    answer(res);
  });
});
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const json = (status: number, body: unknown, delayMs = 0) => (res: ServerResponse) =>
  setTimeout(() => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body)), delayMs);

/** gcloud and az, answering the commands the post-step uses. */
function cliPeer(overrides: Record<string, { status: number; stdout?: string; stderr?: string }> = {}): { exec: Exec; calls: string[][] } {
  const calls: string[][] = [];
  const exec: Exec = (command, args) => {
    calls.push([command, ...args]);
    const key = `${command} ${args.slice(0, 2).join(" ")}`;
    const forced = overrides[key];
    if (forced) return { status: forced.status, stdout: forced.stdout ?? "", stderr: forced.stderr ?? "", error: undefined };
    const out: Record<string, string> = {
      "gcloud functions describe": `${base.replace("http://", "https://")}/gcp-migrate\n`,
      "gcloud auth print-identity-token": "id-token-of-the-deployer\n",
      // Cloud Scheduler's bookkeeping: an attempt started after the deploy, no finished status yet.
      "gcloud scheduler jobs": JSON.stringify({ lastAttemptTime: new Date(Date.now() + 1000).toISOString(), status: {} }),
      "az functionapp show": `${base.replace("http://", "")}\n`,
      "az functionapp keys": "master-key-of-the-app\n",
    };
    if (!(key in out)) throw new Error(`unexpected command ${command} ${args.join(" ")}`);
    return { status: 0, stdout: out[key]!, stderr: "", error: undefined };
  };
  return { exec, calls };
}

const config = testConfig();
/** The functions are called at https://…; here they are the local peer over HTTP. */
const overHttp: typeof fetch = (input, init) => fetch(String(input).replace("https://", "http://"), init);
const quiet = { log: () => {}, fetch: overHttp };

describe("postDeploy: the migrate step is judged by the migrate function's answer", () => {
  it("GCP: a started scheduler attempt is not success; the function's 500 fails the deploy with its message", async () => {
    answer = json(500, { error: { code: "migrate_failed", message: "password authentication failed for user \"webhooks_admin\"" } });
    const peer = cliPeer();
    const result = await postDeploy("gcp", config, { ...quiet, exec: peer.exec });
    expect(result.ok).toBe(false);
    expect(result.message).toMatch(/failed \(HTTP 500\): password authentication failed/);
    expect(result.message).toContain("gcloud functions logs read hooktest-migrate --gen2 --region=europe-west1 --project=hooks-test-project");
    expect(result.message).toContain("Run it again: gcloud functions call hooktest-migrate");
  });

  it("GCP: calls the function with the deployer's identity token and waits for its answer, however long the run", async () => {
    seen.length = 0;
    answer = json(200, { applied: ["001_outbox.sql", "002_inbox.sql"], appRole: "webhooks_app", roleCreated: true }, 300);
    const peer = cliPeer();
    const result = await postDeploy("gcp", config, { ...quiet, exec: peer.exec });
    expect(result).toEqual({ ok: true, message: "migrate answered: applied 001_outbox.sql, 002_inbox.sql; webhooks_app created" });
    expect(peer.calls[0]).toEqual(["gcloud", "functions", "describe", "hooktest-migrate", "--gen2", "--region=europe-west1", "--project=hooks-test-project", "--format=value(serviceConfig.uri)"]);
    expect(peer.calls.some((c) => c[1] === "scheduler")).toBe(false);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: "POST", url: "/gcp-migrate", headers: { authorization: "Bearer id-token-of-the-deployer" } });
  });

  it("GCP: an answer that is not the function's (a proxy's HTML, a refusal, no answer in time) is not success", async () => {
    answer = (res) => res.writeHead(502).end("<html>Bad Gateway</html>");
    expect((await postDeploy("gcp", config, { ...quiet, exec: cliPeer().exec })).message).toMatch(/HTTP 502\): <html>Bad Gateway/);
    answer = json(403, { error: "Forbidden" });
    expect((await postDeploy("gcp", config, { ...quiet, exec: cliPeer().exec })).message).toMatch(/refused the call \(HTTP 403\).*roles\/run\.invoker/);
    answer = json(200, { ok: true });
    expect((await postDeploy("gcp", config, { ...quiet, exec: cliPeer().exec })).ok).toBe(false);
    answer = json(200, { applied: [], appRole: "webhooks_app", roleCreated: false }, 2000);
    const late = await postDeploy("gcp", config, { ...quiet, exec: cliPeer().exec, timeoutMs: 200 });
    expect(late).toEqual({ ok: false, message: expect.stringMatching(/no answer within 0 s\); whether it ran is unknown/) });
  });

  it("GCP: without a logged-in gcloud the step did not run, and the message says what to do", async () => {
    const peer = cliPeer({ "gcloud auth print-identity-token": { status: 1, stderr: "ERROR: (gcloud.auth.print-identity-token) You do not currently have an active account selected." } });
    const result = await postDeploy("gcp", config, { ...quiet, exec: peer.exec });
    expect(result).toEqual({ ok: false, message: expect.stringMatching(/no active account|active account selected[\s\S]*gcloud auth login/) });
  });

  it("Azure: calls POST /api/migrate on the migrate app with its master key and reports what it applied", async () => {
    seen.length = 0;
    answer = json(200, { applied: [], appRole: "webhooks_app", roleCreated: false });
    const peer = cliPeer();
    const result = await postDeploy("azure", config, { ...quiet, exec: peer.exec });
    expect(result).toEqual({ ok: true, message: "migrate answered: no migration to apply; webhooks_app up to date" });
    expect(peer.calls[0]).toEqual(["az", "functionapp", "show", "--resource-group", "hooktest-rg", "--name", "hooktest-migrate", "--query", "defaultHostName", "--output", "tsv"]);
    expect(seen[0]).toMatchObject({ method: "POST", url: "/api/migrate", headers: { "x-functions-key": "master-key-of-the-app" } });
    answer = json(500, { error: { code: "migrate_failed", message: "Set DATABASE_URL (the database-url secret)" } });
    expect((await postDeploy("azure", config, { ...quiet, exec: peer.exec })).message).toMatch(/HTTP 500\): Set DATABASE_URL[\s\S]*az webapp log tail/);
  });

  it("AWS: the apply's aws_lambda_invocation already judged the function's answer", async () => {
    const exec: Exec = () => { throw new Error("no command expected"); };
    expect(await postDeploy("aws", config, { exec })).toEqual({ ok: true, message: expect.stringContaining("aws_lambda_invocation") });
  });
});

describe("before a GCP deploy: which generated secrets already have a version (Terraform writes none for them)", () => {
  const gcloud = (answers: Record<string, { status: number; stdout?: string; stderr?: string }>): Exec => (command, args) => {
    const answer = answers[args[3]!];
    if (command !== "gcloud" || args.slice(0, 3).join(" ") !== "secrets versions list" || !answer) throw new Error(`unexpected ${command} ${args.join(" ")}`);
    return { status: answer.status, stdout: answer.stdout ?? "", stderr: answer.stderr ?? "", error: undefined };
  };

  it("a first deploy: no secret yet, or no Secret Manager API yet, so both are generated", () => {
    const exec = gcloud({
      "hooktest-admin-token": { status: 1, stderr: "ERROR: (gcloud.secrets.versions.list) NOT_FOUND: Secret [projects/1/secrets/hooktest-admin-token] not found or has no versions." },
      "hooktest-encryption-keys": { status: 1, stderr: "ERROR: (gcloud.secrets.versions.list) PERMISSION_DENIED: Secret Manager API has not been used in project 1 before or it is disabled. reason: SERVICE_DISABLED" },
    });
    expect(existingGeneratedSecrets(config, exec)).toEqual({ names: [] });
  });

  it("version 1 destroyed after a rotation: the operator's later version counts, so Terraform writes nothing", () => {
    const exec = gcloud({
      "hooktest-admin-token": { status: 0, stdout: "ENABLED\n" },
      "hooktest-encryption-keys": { status: 0, stdout: "ENABLED\nDISABLED\nDESTROYED\n" },
    });
    expect(existingGeneratedSecrets(config, exec)).toEqual({ names: ["admin-token", "encryption-keys"] });
    // Only destroyed versions left: nothing to keep, a new value is generated.
    expect(existingGeneratedSecrets(config, gcloud({ "hooktest-admin-token": { status: 0, stdout: "DESTROYED\n" }, "hooktest-encryption-keys": { status: 0, stdout: "" } }))).toEqual({ names: [] });
  });

  it("cannot tell (not logged in): the deploy stops rather than guess", () => {
    const exec = gcloud({ "hooktest-admin-token": { status: 1, stderr: "ERROR: (gcloud.secrets.versions.list) You do not currently have an active account selected." }, "hooktest-encryption-keys": { status: 0 } });
    expect(existingGeneratedSecrets(config, exec)).toEqual({ problem: expect.stringMatching(/active account[\s\S]*hooktest-admin-token has a version/) });
  });
});
