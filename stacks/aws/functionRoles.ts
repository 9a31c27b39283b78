/**
 * One IAM role per function (and one for the scheduler and the direct API→SQS integration),
 * each allowed exactly the actions it uses on exactly the resources it touches. No action is a
 * wildcard; the only `Resource: "*"` statements are X-Ray's and the VPC network-interface
 * actions of the AWS-managed VPC policy, which AWS does not scope to a resource.
 */
import { Construct } from "constructs";
import { IamRole } from "@cdktf/provider-aws/lib/iam-role/index.js";
import { IamRolePolicy } from "@cdktf/provider-aws/lib/iam-role-policy/index.js";
import { IamRolePolicyAttachment } from "@cdktf/provider-aws/lib/iam-role-policy-attachment/index.js";
import type { FunctionName } from "../artifacts.js";

export interface Statement {
  Effect: "Allow";
  Action: string[];
  Resource: string | string[];
}

export interface FunctionRolesProps {
  prefix: string;
  queueArn: string;
  deadLetterQueueArn: string;
  partnerSecretsArn: string;
  databaseSecretArn: string;
  claimCheckBucketArn: string;
  logGroupArns: Record<FunctionName, string>;
}

const assumedBy = (service: string) =>
  JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: { Service: service }, Action: "sts:AssumeRole" }] });

export class FunctionRoles extends Construct {
  readonly roleArns: Record<FunctionName, string>;
  private readonly prefix: string;

  constructor(scope: Construct, id: string, props: FunctionRolesProps) {
    super(scope, id);
    this.prefix = props.prefix;
    const logs = (fn: FunctionName): Statement => ({
      Effect: "Allow",
      Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
      Resource: `${props.logGroupArns[fn]}:*`,
    });
    const tracing: Statement = { Effect: "Allow", Action: ["xray:PutTraceSegments", "xray:PutTelemetryRecords"], Resource: "*" };
    const readSecret = (arn: string): Statement => ({ Effect: "Allow", Action: ["secretsmanager:GetSecretValue"], Resource: arn });
    const send: Statement = { Effect: "Allow", Action: ["sqs:SendMessage"], Resource: props.queueArn };

    const claimChecks = `${props.claimCheckBucketArn}/*`;
    const ingest = this.role(
      "ingest",
      "lambda.amazonaws.com",
      [logs("ingest"), tracing, readSecret(props.partnerSecretsArn), send, { Effect: "Allow", Action: ["s3:PutObject"], Resource: claimChecks }],
      false,
    );
    const processor = this.role(
      "processor",
      "lambda.amazonaws.com",
      [
        logs("processor"),
        tracing,
        readSecret(props.partnerSecretsArn),
        readSecret(props.databaseSecretArn),
        // Receive/delete for the event source mapping; send for "retry after a delay" (a new
        // message with DelaySeconds); the DLQ send for an explicit dead-letter with a reason.
        {
          Effect: "Allow",
          Action: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility", "sqs:SendMessage"],
          Resource: props.queueArn,
        },
        { Effect: "Allow", Action: ["sqs:SendMessage"], Resource: props.deadLetterQueueArn },
        { Effect: "Allow", Action: ["s3:GetObject", "s3:PutObject"], Resource: claimChecks },
      ],
      true,
    );
    const relay = this.role("relay", "lambda.amazonaws.com", [logs("relay"), tracing, readSecret(props.databaseSecretArn)], true);
    this.roleArns = { ingest: ingest.arn, processor: processor.arn, relay: relay.arn };
  }

  /**
   * A role for an AWS service acting on our behalf (the scheduler invoking the relay, API
   * Gateway sending to SQS), kept here with the other identities. Returns its ARN.
   */
  serviceRole(name: string, service: string, statements: Statement[]): string {
    return this.role(name, service, statements).arn;
  }

  private role(name: string, service: string, statements: Statement[], inVpc = false): IamRole {
    const role = new IamRole(this, `${name}-role`, { name: `${this.prefix}-${name}`, assumeRolePolicy: assumedBy(service) });
    new IamRolePolicy(this, `${name}-policy`, {
      name: `${name}-least-privilege`,
      role: role.id,
      policy: JSON.stringify({ Version: "2012-10-17", Statement: statements }),
    });
    if (inVpc) {
      new IamRolePolicyAttachment(this, `${name}-vpc`, {
        role: role.name,
        policyArn: "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole",
      });
    }
    return role;
  }
}
