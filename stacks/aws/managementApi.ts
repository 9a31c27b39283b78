/**
 * The management API and admin page on AWS: the management Lambda behind the ingress's HTTP API,
 * on its own route `ANY /api/{proxy+}` (payload 2.0), so `<api>/api` is the management URL and
 * `POST /webhooks/{partner}` stays ingest's. No API Gateway authorizer: the function checks the
 * bearer token itself, in constant time, against the admin token in Secrets Manager (and, with
 * issue 17, the API keys in the database), which neither a JWT authorizer nor IAM could do.
 *
 * The function runs in the private subnets with the workers' security group (PostgreSQL, and
 * HTTPS through the NAT gateway for Secrets Manager), logs in as webhooks_app like the relay.
 */
import type { ITerraformDependable } from "cdktf";
import { Construct } from "constructs";
import { Apigatewayv2Integration } from "@cdktf/provider-aws/lib/apigatewayv2-integration/index.js";
import { Apigatewayv2Route } from "@cdktf/provider-aws/lib/apigatewayv2-route/index.js";
import { LambdaPermission } from "@cdktf/provider-aws/lib/lambda-permission/index.js";
import type { StackConfig } from "../config.js";
import type { HttpIngress } from "./httpIngress.js";
import { NodeFunction, type NodeFunctionProps } from "./nodeFunction.js";

/** The path prefix the management API is served under, on every cloud (the function strips it). */
export const MANAGEMENT_BASE_PATH = "/api";
/** HTTP APIs cut an integration at 30 s; the function answers (or fails) before that. */
const TIMEOUT_SECONDS = 29;

export class ManagementApi extends Construct {
  /** `https://…/api`: what `webhooks --url` takes; the admin page is `<url>/admin`. */
  readonly url: string;
  readonly functionName: string;

  constructor(
    scope: Construct,
    id: string,
    props: { config: StackConfig; ingress: HttpIngress; function: Omit<NodeFunctionProps, "config" | "timeoutSeconds">; after?: ITerraformDependable[] },
  ) {
    super(scope, id);
    const management = new NodeFunction(this, "management", { ...props.function, config: props.config, timeoutSeconds: TIMEOUT_SECONDS });
    const api = props.ingress.api;
    new LambdaPermission(this, "invoke", {
      statementId: "AllowApiGateway",
      action: "lambda:InvokeFunction",
      functionName: management.fn.functionName,
      principal: "apigateway.amazonaws.com",
      // Any method, any path under /api: only this route's requests.
      sourceArn: `${api.executionArn}/*/*${MANAGEMENT_BASE_PATH}/*`,
    });
    const integration = new Apigatewayv2Integration(this, "integration", {
      apiId: api.id,
      integrationType: "AWS_PROXY",
      integrationUri: management.fn.invokeArn,
      payloadFormatVersion: "2.0",
      timeoutMilliseconds: 30_000,
    });
    new Apigatewayv2Route(this, "route", { apiId: api.id, routeKey: `ANY ${MANAGEMENT_BASE_PATH}/{proxy+}`, target: `integrations/${integration.id}` });
    this.url = `${props.ingress.baseUrl}${MANAGEMENT_BASE_PATH.slice(1)}`;
    this.functionName = management.fn.functionName;
  }
}
