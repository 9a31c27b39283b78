/**
 * The migrate step: a Cloud Run function (`functions/gcp/migrate.ts`), the only one given the
 * owner's database URL, that applies the migrations and makes the application role
 * (`prepareDatabase`), and a Cloud Scheduler job that calls it with an OIDC token of the
 * scheduler account, daily: a backstop for a deploy whose post-step did not run, at one
 * idempotent run a day. The deploy itself calls the function after `cdktf deploy` and reads its
 * answer (stacks/postDeploy.ts; by hand, the `migrate_command` output): a scheduler job's
 * `lastAttemptTime` is when an attempt started and its `status` the last finished one's, so it
 * cannot tell whether this deploy's run succeeded. Nothing inside Terraform can call a function
 * after it is deployed without another provider, so the call lives in the deploy script.
 */
import { Construct } from "constructs";
import { CloudSchedulerJob } from "@cdktf/provider-google/lib/cloud-scheduler-job/index.js";
import { CloudRunFunction, type CloudRunFunctionProps } from "./cloudRunFunction.js";

export class MigrateJob extends Construct {
  readonly migrate: CloudRunFunction;
  /** What the deploy runs after `cdktf deploy`. */
  readonly command: string;

  constructor(scope: Construct, id: string, props: { prefix: string; region: string; project: string; migrate: CloudRunFunctionProps; schedulerEmail: string }) {
    super(scope, id);
    this.migrate = new CloudRunFunction(this, "migrate", props.migrate);
    const invoker = this.migrate.allowInvoker("scheduler", props.schedulerEmail);
    const name = `${props.prefix}-migrate`;
    new CloudSchedulerJob(this, "job", {
      name,
      region: props.region,
      schedule: "17 3 * * *",
      timeZone: "Etc/UTC",
      attemptDeadline: `${Math.max(15, props.migrate.timeoutSeconds)}s`,
      retryConfig: { retryCount: 2, minBackoffDuration: "30s" },
      httpTarget: {
        uri: this.migrate.uri,
        httpMethod: "POST",
        oidcToken: { serviceAccountEmail: props.schedulerEmail, audience: this.migrate.uri },
      },
      dependsOn: [invoker],
    });
    this.command = `gcloud functions call ${name} --gen2 --region=${props.region} --project=${props.project}`;
  }
}
