/**
 * API Gateway (google-beta) in front of the ingest function: `POST /webhooks/{partner}`. The
 * gateway calls the function with its own service account's identity token; the function
 * verifies the webhook signature (API Gateway cannot check an HMAC over the body) and publishes
 * to Pub/Sub. Gateway request logs go to Cloud Logging.
 */
import { Fn } from "cdktf";
import { Construct } from "constructs";
import { GoogleApiGatewayApi } from "@cdktf/provider-google-beta/lib/google-api-gateway-api/index.js";
import { GoogleApiGatewayApiConfigA as GoogleApiGatewayApiConfig } from "@cdktf/provider-google-beta/lib/google-api-gateway-api-config/index.js";
import { GoogleApiGatewayGateway } from "@cdktf/provider-google-beta/lib/google-api-gateway-gateway/index.js";
import type { GoogleBetaProvider } from "@cdktf/provider-google-beta/lib/provider/index.js";
import { CloudRunFunction, type CloudRunFunctionProps } from "./cloudRunFunction.js";

export class ApiGatewayIngress extends Construct {
  readonly url: string;
  readonly ingest: CloudRunFunction;

  constructor(
    scope: Construct,
    id: string,
    props: { prefix: string; region: string; beta: GoogleBetaProvider; ingest: CloudRunFunctionProps; gatewayEmail: string },
  ) {
    super(scope, id);
    this.ingest = new CloudRunFunction(this, "ingest", props.ingest);
    this.ingest.allowInvoker("gateway", props.gatewayEmail);
    const provider = props.beta;
    const api = new GoogleApiGatewayApi(this, "api", { provider, apiId: `${props.prefix}-api` });
    const openapi = {
      swagger: "2.0",
      info: { title: `${props.prefix} webhooks ingress`, version: "1.0.0" },
      schemes: ["https"],
      produces: ["application/json"],
      paths: {
        "/webhooks/{partner}": {
          post: {
            operationId: "ingestWebhook",
            parameters: [{ name: "partner", in: "path", required: true, type: "string" }],
            "x-google-backend": { address: this.ingest.uri, path_translation: "APPEND_PATH_TO_ADDRESS", deadline: 10 },
            responses: { "202": { description: "accepted (durably queued)" }, "401": { description: "bad signature" } },
          },
        },
      },
    };
    const config = new GoogleApiGatewayApiConfig(this, "config", {
      provider,
      api: api.apiId,
      apiConfigIdPrefix: `${props.prefix}-`,
      openapiDocuments: [{ document: { path: "openapi.json", contents: Fn.base64encode(Fn.jsonencode(openapi)) } }],
      gatewayConfig: { backendConfig: { googleServiceAccount: props.gatewayEmail } },
      lifecycle: { createBeforeDestroy: true },
    });
    const gateway = new GoogleApiGatewayGateway(this, "gateway", {
      provider,
      gatewayId: `${props.prefix}-gateway`,
      region: props.region,
      apiConfig: config.id,
    });
    this.url = `https://${gateway.defaultHostname}/webhooks/{partner}`;
  }
}
