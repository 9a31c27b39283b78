/**
 * The deploy's migrate step: a VPC Lambda that logs in as Aurora's master user (the one function
 * allowed to read that secret), applies the migrations and prepares the application role
 * `webhooks_app` (IAM login, rows only). Terraform invokes it on every apply that changes its
 * code (the migrations are bundled in it), after the writer instance and the NAT route exist; the
 * processor and relay (their code, the queue mapping, the schedule) wait for it, so nothing reads
 * the queue or the outbox before the schema is there, and new code never runs on an old schema. A failed migration fails the apply, with the function's
 * error. Rerun by hand: `aws lambda invoke --function-name <prefix>-migrate /dev/stdout`.
 */
import { Construct } from "constructs";
import type { ITerraformDependable } from "cdktf";
import { LambdaInvocation } from "@cdktf/provider-aws/lib/lambda-invocation/index.js";
import type { StackConfig } from "../config.js";
import { NodeFunction, type NodeFunctionProps } from "./nodeFunction.js";

/** Long enough for a first migration on a cold Aurora Serverless v2 writer (resuming from 0 ACU takes seconds). */
const MIGRATE_TIMEOUT_SECONDS = 300;

export class DatabaseMigration extends Construct {
  readonly functionName: string;
  /** Done once the schema is current: depend on it to start after the migration. */
  readonly done: LambdaInvocation;

  constructor(
    scope: Construct,
    id: string,
    props: { config: StackConfig; function: Omit<NodeFunctionProps, "config" | "timeoutSeconds">; after: ITerraformDependable[] },
  ) {
    super(scope, id);
    const migrate = new NodeFunction(this, "migrate", { ...props.function, config: props.config, timeoutSeconds: MIGRATE_TIMEOUT_SECONDS });
    this.done = new LambdaInvocation(this, "run", {
      functionName: migrate.fn.functionName,
      input: JSON.stringify({ source: "terraform", step: "migrate" }),
      // A new bundle (new code or new migrations) runs it again; otherwise an apply does not.
      triggers: { code: migrate.fn.sourceCodeHash },
      dependsOn: [migrate.fn, ...props.after],
    });
    this.functionName = migrate.fn.functionName;
  }
}
