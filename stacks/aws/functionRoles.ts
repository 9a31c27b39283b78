/**
 * One IAM role per function (and one for the scheduler and the direct API→SQS integration),
 * each allowed exactly the actions its code calls on exactly the resources it touches. No action
 * is a wildcard, and no AWS-managed policy is attached (AWSLambdaVPCAccessExecutionRole would
 * add `logs:*` writes on every log group). The only `Resource: "*"` statements are X-Ray's and
 * the VPC network-interface actions, which AWS does not scope to a resource.
 */
import { Construct } from "constructs";
import { IamRole } from "@cdktf/provider-aws/lib/iam-role/index.js";
import { IamRolePolicy } from "@cdktf/provider-aws/lib/iam-role-policy/index.js";
import type { FunctionName } from "../artifacts.js";

/** The five AWS functions (the same as every cloud's). */
export type AwsFunctionName = FunctionName;

export interface Statement {
  Effect: "Allow";
  Action: string[];
  Resource: string | string[];
  /** Narrows a statement further (the relay's use of a destination's KMS key, only through that service). */
  Condition?: Record<string, Record<string, string | string[]>>;
}

export interface FunctionRolesProps {
  prefix: string;
  queueArn: string;
  deadLetterQueueArn: string;
  partnerSecretsArn: string;
  /** The RDS-managed master secret: read by migrate alone. */
  databaseSecretArn: string;
  /** `arn:aws:rds-db:…:dbuser:<cluster resource id>/webhooks_app`: what processor and relay log in as. */
  databaseUserArn: string;
  /** The alert webhook's signing secret, when alerts go to a webhook (read by the relay). */
  alertSecretArn?: string;
  /** The management API's bootstrap admin token (read by the management function alone). */
  adminTokenSecretArn: string;
  /** ENCRYPTION_KEYS: read by the functions that read or write subscription secrets (processor, relay, management). */
  encryptionKeysSecretArn: string;
  claimCheckBucketArn: string;
  logGroupArns: Record<AwsFunctionName, string>;
  /** Direct ingress: the processor verifies the signatures (it reads the partners either way, for forwarding). */
  processorVerifies: boolean;
}

/**
 * What Lambda needs to attach a function to the VPC: the network-interface actions of
 * AWSLambdaVPCAccessExecutionRole (v3) without its three `logs:` actions. AWS documents that
 * DescribeNetworkInterfaces works only on `"Resource": "*"` (Lambda developer guide, "Giving
 * Lambda functions access to resources in an Amazon VPC").
 */
export const VPC_NETWORK_INTERFACE_ACTIONS = [
  "ec2:CreateNetworkInterface",
  "ec2:DescribeNetworkInterfaces",
  "ec2:DescribeSubnets",
  "ec2:DeleteNetworkInterface",
  "ec2:AssignPrivateIpAddresses",
  "ec2:UnassignPrivateIpAddresses",
];

const assumedBy = (service: string) =>
  JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: { Service: service }, Action: "sts:AssumeRole" }] });

export class FunctionRoles extends Construct {
  readonly roleArns: Record<AwsFunctionName, string>;
  /** Each function's inline policy: what must exist before the function's first call. */
  readonly policies = {} as Record<AwsFunctionName, IamRolePolicy>;
  private readonly prefix: string;
  private readonly roleNames = {} as Record<AwsFunctionName, string>;

  constructor(scope: Construct, id: string, props: FunctionRolesProps) {
    super(scope, id);
    this.prefix = props.prefix;
    const logs = (fn: AwsFunctionName): Statement => ({
      Effect: "Allow",
      Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
      Resource: `${props.logGroupArns[fn]}:*`,
    });
    const tracing: Statement = { Effect: "Allow", Action: ["xray:PutTraceSegments", "xray:PutTelemetryRecords"], Resource: "*" };
    const inVpc: Statement = { Effect: "Allow", Action: VPC_NETWORK_INTERFACE_ACTIONS, Resource: "*" };
    const readSecret = (arn: string): Statement => ({ Effect: "Allow", Action: ["secretsmanager:GetSecretValue"], Resource: arn });
    const connectAsApp: Statement = { Effect: "Allow", Action: ["rds-db:connect"], Resource: props.databaseUserArn };
    const claimChecks = `${props.claimCheckBucketArn}/*`;

    const ingest = this.role("ingest", "lambda.amazonaws.com", [
      logs("ingest"),
      tracing,
      readSecret(props.partnerSecretsArn),
      { Effect: "Allow", Action: ["sqs:SendMessage"], Resource: props.queueArn },
      { Effect: "Allow", Action: ["s3:PutObject"], Resource: claimChecks },
    ]);
    const processor = this.role("processor", "lambda.amazonaws.com", [
      logs("processor"),
      tracing,
      inVpc,
      connectAsApp,
      // The partners: their forward destinations (issue 16: the processor enqueues each forwarded
      // event in the inbox write's transaction) and, with direct ingress, their signing secrets.
      readSecret(props.partnerSecretsArn),
      // A forwarding partner's subscription secrets are written encrypted (issue 17).
      readSecret(props.encryptionKeysSecretArn),
      // Receive/delete/attributes for the event source mapping (the explicit dead-letter deletes
      // too); send for a deferral, which re-sends the message with a delay and acks the original.
      { Effect: "Allow", Action: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"], Resource: props.queueArn },
      { Effect: "Allow", Action: ["sqs:SendMessage"], Resource: props.queueArn },
      // An explicit dead-letter with its reason (a malformed or forged message).
      { Effect: "Allow", Action: ["sqs:SendMessage"], Resource: props.deadLetterQueueArn },
      { Effect: "Allow", Action: ["s3:GetObject"], Resource: claimChecks },
    ]);
    const relay = this.role("relay", "lambda.amazonaws.com", [
      logs("relay"),
      tracing,
      inVpc,
      connectAsApp,
      // The subscriptions' signing secrets are encrypted at rest (issue 17): the relay decrypts them to sign.
      readSecret(props.encryptionKeysSecretArn),
      ...(props.alertSecretArn ? [readSecret(props.alertSecretArn)] : []),
    ]);
    // The management API: the database as webhooks_app (like the relay), its admin token, and the
    // keys to encrypt the secrets of the subscriptions it creates. No queue, no bucket, no partners.
    const management = this.role("management", "lambda.amazonaws.com", [
      logs("management"),
      tracing,
      inVpc,
      connectAsApp,
      readSecret(props.adminTokenSecretArn),
      readSecret(props.encryptionKeysSecretArn),
    ]);
    // The only reader of the master credentials: it migrates and prepares webhooks_app.
    const migrate = this.role("migrate", "lambda.amazonaws.com", [logs("migrate"), tracing, inVpc, readSecret(props.databaseSecretArn)]);
    this.roleArns = { ingest: ingest.arn, processor: processor.arn, relay: relay.arn, migrate: migrate.arn, management: management.arn };
  }

  /**
   * A further inline policy on a function's role, for a grant on a resource made after the roles
   * (the relay function the management function wakes in scheduled mode). Returns the policy, for
   * the function's `after`.
   */
  grant(fn: AwsFunctionName, what: string, statements: Statement[]): IamRolePolicy {
    return new IamRolePolicy(this, `${fn}-${what}-policy`, {
      name: `${fn}-${what}`,
      role: this.roleNames[fn],
      policy: JSON.stringify({ Version: "2012-10-17", Statement: statements }),
    });
  }

  /**
   * A role for an AWS service acting on our behalf (the scheduler invoking the relay, API
   * Gateway sending to SQS), kept here with the other identities. Returns its ARN.
   */
  serviceRole(name: string, service: string, statements: Statement[]): string {
    return this.role(name, service, statements).arn;
  }

  private role(name: string, service: string, statements: Statement[]): IamRole {
    const role = new IamRole(this, `${name}-role`, { name: `${this.prefix}-${name}`, assumeRolePolicy: assumedBy(service) });
    const policy = new IamRolePolicy(this, `${name}-policy`, {
      name: `${name}-least-privilege`,
      role: role.id,
      policy: JSON.stringify({ Version: "2012-10-17", Statement: statements }),
    });
    if (name === "ingest" || name === "processor" || name === "relay" || name === "migrate" || name === "management") {
      this.policies[name] = policy;
      this.roleNames[name] = role.id;
    }
    return role;
  }
}
