/**
 * The public entry point: an API Gateway HTTP API with access logs, `POST /webhooks/{partner}`.
 *
 * Default mode: the route invokes the ingest Lambda, which checks the signature on the exact
 * bytes received and answers 401 before anything is stored (an authorizer cannot do this: it
 * never sees the body).
 *
 * Direct mode (`awsDirectQueueIngress`): the route sends the body straight to SQS with the
 * first-class `SQS-SendMessage` integration; no Lambda runs on the request path and the
 * processor verifies the signature. Trade-offs (docs/clouds.md): unsigned traffic reaches the
 * queue, the body travels as text, and only the headers mapped below reach the processor.
 */
import { Construct } from "constructs";
import { Apigatewayv2Api } from "@cdktf/provider-aws/lib/apigatewayv2-api/index.js";
import { Apigatewayv2Integration } from "@cdktf/provider-aws/lib/apigatewayv2-integration/index.js";
import { Apigatewayv2Route } from "@cdktf/provider-aws/lib/apigatewayv2-route/index.js";
import { Apigatewayv2Stage } from "@cdktf/provider-aws/lib/apigatewayv2-stage/index.js";
import { LambdaPermission } from "@cdktf/provider-aws/lib/lambda-permission/index.js";
import type { StackConfig } from "../config.js";
import type { FunctionRoles } from "./functionRoles.js";
import { NodeFunction, type NodeFunctionProps } from "./nodeFunction.js";

/** Headers carried as SQS message attributes in direct mode (Standard Webhooks' three). */
export const DIRECT_MODE_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

const ACCESS_LOG_FORMAT = JSON.stringify({
  requestId: "$context.requestId",
  ip: "$context.identity.sourceIp",
  time: "$context.requestTime",
  route: "$context.routeKey",
  status: "$context.status",
  length: "$context.responseLength",
  latency: "$context.integrationLatency",
  integrationError: "$context.integrationErrorMessage",
});

export interface HttpIngressProps {
  prefix: string;
  config: StackConfig;
  roles: FunctionRoles;
  queueUrl: string;
  queueArn: string;
  accessLogGroupArn: string;
  ingest: Omit<NodeFunctionProps, "config" | "timeoutSeconds">;
}

export class HttpIngress extends Construct {
  /** `https://…/webhooks/{partner}` */
  readonly url: string;
  readonly mode: "lambda" | "direct-sqs";
  /** The HTTP API, for the other routes on it (the management API's). */
  readonly api: Apigatewayv2Api;
  /** `https://<api id>.execute-api.<region>.amazonaws.com/` (the `$default` stage: no stage in the path). */
  readonly baseUrl: string;

  constructor(scope: Construct, id: string, props: HttpIngressProps) {
    super(scope, id);
    const api = new Apigatewayv2Api(this, "api", { name: `${props.prefix}-ingress`, protocolType: "HTTP" });
    this.api = api;
    const stage = new Apigatewayv2Stage(this, "stage", {
      apiId: api.id,
      name: "$default",
      autoDeploy: true,
      accessLogSettings: { destinationArn: props.accessLogGroupArn, format: ACCESS_LOG_FORMAT },
      defaultRouteSettings: { throttlingBurstLimit: 1000, throttlingRateLimit: 500 },
    });
    this.mode = props.config.awsDirectQueueIngress ? "direct-sqs" : "lambda";
    const integration = this.mode === "direct-sqs" ? this.directToQueue(api, props) : this.throughLambda(api, props);
    new Apigatewayv2Route(this, "route", { apiId: api.id, routeKey: "POST /webhooks/{partner}", target: `integrations/${integration.id}` });
    this.baseUrl = stage.invokeUrl;
    this.url = `${stage.invokeUrl}webhooks/{partner}`;
  }

  private throughLambda(api: Apigatewayv2Api, props: HttpIngressProps): Apigatewayv2Integration {
    // Ingest stays outside the VPC: it talks to SQS and Secrets Manager only, and a cold start
    // without a network interface is faster on the request path.
    const ingest = new NodeFunction(this, "ingest", { ...props.ingest, config: props.config, timeoutSeconds: 10 });
    new LambdaPermission(this, "invoke", {
      statementId: "AllowApiGateway",
      action: "lambda:InvokeFunction",
      functionName: ingest.fn.functionName,
      principal: "apigateway.amazonaws.com",
      sourceArn: `${api.executionArn}/*/POST/webhooks/*`,
    });
    return new Apigatewayv2Integration(this, "integration", {
      apiId: api.id,
      integrationType: "AWS_PROXY",
      integrationUri: ingest.fn.invokeArn,
      payloadFormatVersion: "2.0",
      timeoutMilliseconds: 10_000,
    });
  }

  private directToQueue(api: Apigatewayv2Api, props: HttpIngressProps): Apigatewayv2Integration {
    const roleArn = props.roles.serviceRole("api-queue", "apigateway.amazonaws.com", [
      { Effect: "Allow", Action: ["sqs:SendMessage"], Resource: props.queueArn },
    ]);
    // `$${…}` is Terraform's escape for a literal `${…}`, which API Gateway then substitutes.
    const attribute = (source: string) => ({ DataType: "String", StringValue: `$\${${source}}` });
    const attributes: Record<string, { DataType: string; StringValue: string }> = { partner: attribute("request.path.partner") };
    for (const header of DIRECT_MODE_HEADERS) attributes[header] = attribute(`request.header.${header}`);
    return new Apigatewayv2Integration(this, "integration", {
      apiId: api.id,
      integrationType: "AWS_PROXY",
      integrationSubtype: "SQS-SendMessage",
      credentialsArn: roleArn,
      payloadFormatVersion: "1.0",
      requestParameters: {
        QueueUrl: props.queueUrl,
        MessageBody: "$request.body",
        MessageAttributes: JSON.stringify(attributes),
      },
    });
  }
}
