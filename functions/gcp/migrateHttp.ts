/**
 * The GCP migrate step's handler, apart from functions/gcp/handlers.ts: that module holds the
 * request-path handlers and with them the telemetry and relay code (functions/telemetry.ts and
 * the GCP exporters with google-auth-library, QuickJS through the relay), whose dynamic imports
 * esbuild emits as chunks of every bundle whose entry imports the module, used or not. Migrate
 * runs once per deploy with the owner's URL and needs none of it (test/functions/bundles.test.ts).
 */
import type { Request, Response } from "@google-cloud/functions-framework";
import { prepareDatabase } from "../../shared/cloud/prepareDatabase.js";
import { FunctionConfigError } from "../../shared/cloud/settings.js";
import type { GcpRuntime } from "./runtime.js";
import { sendJson } from "./sendJson.js";

/**
 * The deploy's migrate step (Cloud Scheduler job, run by the deploy after `cdktf deploy`): as the
 * owner (`DATABASE_ADMIN_URL`), apply the migrations and make the application role whose name and
 * password are those of `DATABASE_URL`, so the role always matches what the other functions dial.
 * 200 with what was applied; 500 with the error's message (the job's run fails).
 */
export async function migrateHttp(runtime: GcpRuntime, _req: Request, res: Response): Promise<void> {
  try {
    const app = appRoleOf(runtime.settings.DATABASE_URL);
    const owner = await runtime.ownerDatabase();
    try {
      const result = await prepareDatabase(owner, app);
      runtime.logger.info(result, "database migrated; application role ready");
      sendJson(res, 200, result);
    } finally {
      await owner.close();
    }
  } catch (error) {
    runtime.logger.error({ err: error }, "migrate failed");
    sendJson(res, 500, { error: { code: "migrate_failed", message: (error as Error).message } });
  }
}

function appRoleOf(url: string | undefined): { appRole: string; password: string } {
  if (!url) throw new FunctionConfigError("Set DATABASE_URL (the application role's URL): migrate gives that role its name and password.");
  const parsed = new URL(url);
  if (!parsed.username || !parsed.password) throw new FunctionConfigError("DATABASE_URL must name the application role and its password (postgres://webhooks_app:…@host:5432/webhooks).");
  return { appRole: decodeURIComponent(parsed.username), password: decodeURIComponent(parsed.password) };
}
