/**
 * The relay's grants on the AWS destinations of `relayDestinations` (issue 31): the one action each
 * kind of send needs, on exactly the resources listed. `sqs:SendMessage` also authorizes
 * SendMessageBatch, `sns:Publish` PublishBatch. A queue or topic encrypted with a customer-managed
 * key needs the producer to be allowed kms:GenerateDataKey and kms:Decrypt on that key (the SQS and
 * SNS developer guides, "key management"/"encryption at rest"); an EventBridge bus uses its key
 * itself. Nothing for an empty list: no policy at all.
 *
 * The same statements are what an operator applies by hand who keeps the list empty
 * (docs/deploy-aws.md, "Destinations beyond HTTP"). A destination in another account also needs
 * that account's queue or topic policy (or bus policy) to allow the relay's role: IAM on this side
 * alone does not reach across accounts.
 */
import type { AwsDestinationKind, AwsRelayDestination } from "../relayDestinations.js";
import type { Statement } from "./functionRoles.js";

const SEND_ACTION: Record<AwsDestinationKind, string> = {
  sqs: "sqs:SendMessage",
  sns: "sns:Publish",
  eventbridge: "events:PutEvents",
};

export const KMS_PRODUCER_ACTIONS = ["kms:GenerateDataKey", "kms:Decrypt"];

/**
 * One statement per action, its resources in the order listed; then one per key named, usable only
 * through the services (and regions) of the destinations it encrypts (`kms:ViaService`), so the
 * relay cannot decrypt with it directly.
 */
export function destinationStatements(destinations: readonly AwsRelayDestination[]): Statement[] {
  const statements: Statement[] = [];
  for (const kind of ["sqs", "sns", "eventbridge"] as const) {
    const arns = destinations.filter((d) => d.kind === kind).map((d) => d.arn);
    if (arns.length > 0) statements.push({ Effect: "Allow", Action: [SEND_ACTION[kind]], Resource: arns });
  }
  const viaServices = new Map<string, Set<string>>();
  for (const d of destinations) {
    if (!d.kmsKeyArn) continue;
    const [, partition, , region] = d.arn.split(":");
    const services = viaServices.get(d.kmsKeyArn) ?? new Set<string>();
    services.add(`${d.kind}.${region}.amazonaws.com${partition === "aws-cn" ? ".cn" : ""}`);
    viaServices.set(d.kmsKeyArn, services);
  }
  for (const [key, services] of viaServices) {
    const via = [...services];
    statements.push({ Effect: "Allow", Action: KMS_PRODUCER_ACTIONS, Resource: key, Condition: { StringEquals: { "kms:ViaService": via.length === 1 ? via[0]! : via } } });
  }
  return statements;
}
