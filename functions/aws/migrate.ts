/**
 * AWS migrate: the deploy step Terraform invokes (aws_lambda_invocation, on every apply that
 * changes this bundle, which carries the migrations). As Aurora's master user, from the
 * RDS-managed secret only this function may read, it applies the migrations and prepares the
 * application role (`WEBHOOKS_DATABASE_USER`, webhooks_app) for IAM logins. Idempotent: invoke it
 * again by hand at any time (docs/deploy-aws.md). An error fails the invocation, and so the apply.
 */
import { prepareDatabase, type PrepareResult } from "../../shared/cloud/prepareDatabase.js";
import { FunctionConfigError } from "../../shared/cloud/settings.js";
import { awsRuntime, type AwsRuntime } from "./runtime.js";

export async function handleMigrate(runtime: AwsRuntime): Promise<PrepareResult> {
  const appRole = runtime.settings.WEBHOOKS_DATABASE_USER;
  if (!appRole) throw new FunctionConfigError("Set WEBHOOKS_DATABASE_USER: the application role migrate prepares (webhooks_app).");
  const owner = await runtime.ownerDatabase();
  try {
    const result = await prepareDatabase(owner, { appRole, iamAuth: true });
    runtime.logger.info(result, "database migrated; application role ready");
    return result;
  } finally {
    await owner.close();
  }
}

export const handler = (): Promise<PrepareResult> => handleMigrate(awsRuntime());
