/**
 * Azure migrate: the deploy step. Its own Function App (on the shared plan, in the VNet) whose
 * timer runs at every start of the app (`runOnStartup`: a deploy restarts it, so each deploy runs
 * it before traffic depends on a new schema) and then every few minutes (a failed first run, say
 * while a Key Vault reference was still resolving, repairs itself; a run with nothing to do costs
 * a few queries). As the server's admin (DATABASE_ADMIN_URL, which no other app can read) it
 * applies the migrations and makes the application role of DATABASE_URL (webhooks_app) with
 * that URL's password: the password lives in one secret only. Idempotent and safe concurrently
 * (prepareDatabase serialises runs); a failure is logged and thrown, and the next tick retries.
 * A timer answers no one, so the deploy (stacks/postDeploy.ts) runs the same step through
 * `POST /api/migrate`, open to the app's master key only, and reads the answer: 200 with what was
 * applied, or 500 with the error's message.
 */
import { app, type HttpResponseInit, type Timer } from "@azure/functions";
import { prepareDatabase, type PrepareResult } from "../../shared/cloud/prepareDatabase.js";
import { FunctionConfigError } from "../../shared/cloud/settings.js";
import { azureRuntime, type AzureRuntime } from "./runtime.js";

/** The application role and its password, from the URL the other functions connect with. */
export function appRoleOf(databaseUrl: string | undefined): { appRole: string; password: string } {
  if (!databaseUrl) throw new FunctionConfigError("Set DATABASE_URL (the database-url secret): migrate gives its role that URL's password.");
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    throw new FunctionConfigError("DATABASE_URL is not a URL; expected postgres://webhooks_app:<password>@<server>:5432/webhooks.");
  }
  const appRole = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  if (!appRole || !password) throw new FunctionConfigError("DATABASE_URL must name the application role and its password (postgres://webhooks_app:<password>@…).");
  return { appRole, password };
}

export async function handleMigrate(runtime: AzureRuntime): Promise<PrepareResult> {
  const role = appRoleOf(runtime.settings.DATABASE_URL);
  const owner = await runtime.ownerDatabase();
  try {
    const result = await prepareDatabase(owner, role);
    runtime.logger.info({ applied: result.applied, appRole: result.appRole, roleCreated: result.roleCreated }, "database migrated; application role ready");
    return result;
  } catch (error) {
    runtime.logger.error({ err: error }, "migrate failed; the next timer tick retries (the other functions refuse to start until the schema is current)");
    throw error;
  } finally {
    await owner.close();
  }
}

/** The registered handler, exported too so the bundle can be driven outside the host. */
export const handler = async (_timer: Timer) => { await handleMigrate(azureRuntime()); };

/** The deploy's call: the step's outcome as JSON, never a stack trace. */
export const httpHandler = async (): Promise<HttpResponseInit> => {
  try {
    return { status: 200, jsonBody: await handleMigrate(azureRuntime()) };
  } catch (error) {
    return { status: 500, jsonBody: { error: { code: "migrate_failed", message: (error as Error).message } } };
  }
};

app.timer("migrate", {
  schedule: "%WEBHOOKS_MIGRATE_SCHEDULE%",
  runOnStartup: true,
  handler,
});

app.http("migrate-now", {
  methods: ["POST"],
  authLevel: "admin", // the master key: the deployer's, read with `az functionapp keys list`
  route: "migrate",
  handler: httpHandler,
});
