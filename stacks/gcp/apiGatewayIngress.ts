/**
 * API Gateway (google-beta) in front of two functions: `POST /webhooks/{partner}` → ingest, and
 * every method on `/api/**` → the management API (its admin page, OpenAPI document and reference
 * included). The gateway calls each function with its own service account's identity token; only
 * that account holds run.invoker on them. Ingest verifies the webhook signature (API Gateway
 * cannot check an HMAC over the body) and publishes to Pub/Sub. Gateway request logs go to Cloud
 * Logging.
 *
 * Because the gateway puts its own identity token in `Authorization`, the caller's
 * `Authorization: Bearer <admin token>` reaches the management function as
 * `X-Forwarded-Authorization`, where the function reads it (docs/clouds.md).
 */
import { Fn } from "cdktf";
import { Construct } from "constructs";
import { GoogleApiGatewayApi } from "@cdktf/provider-google-beta/lib/google-api-gateway-api/index.js";
import { GoogleApiGatewayApiConfigA as GoogleApiGatewayApiConfig } from "@cdktf/provider-google-beta/lib/google-api-gateway-api-config/index.js";
import { GoogleApiGatewayGateway } from "@cdktf/provider-google-beta/lib/google-api-gateway-gateway/index.js";
import type { GoogleBetaProvider } from "@cdktf/provider-google-beta/lib/provider/index.js";
import { CloudRunFunction, type CloudRunFunctionProps } from "./cloudRunFunction.js";

/** The management API's path prefix, the same on every cloud; the function strips it. */
export const GCP_MANAGEMENT_BASE_PATH = "/api";
/** What the management routes are served with (OpenAPI 2.0 has no "any method"). */
const MANAGEMENT_METHODS = ["get", "post", "put", "patch", "delete"] as const;
/** Seconds the gateway waits for the management function (its Cloud Run timeout is longer). */
const MANAGEMENT_DEADLINE = 30;

export class ApiGatewayIngress extends Construct {
  readonly url: string;
  /** `https://<gateway>/api`: what `webhooks --url` takes; the admin page is `<url>/admin`. */
  readonly managementUrl: string;
  readonly ingest: CloudRunFunction;
  readonly management: CloudRunFunction;

  constructor(
    scope: Construct,
    id: string,
    props: {
      prefix: string;
      region: string;
      beta: GoogleBetaProvider;
      ingest: CloudRunFunctionProps;
      /** The management function (a construct of its own, so the comparison counts it apart). */
      management: CloudRunFunction;
      gatewayEmail: string;
    },
  ) {
    super(scope, id);
    this.ingest = new CloudRunFunction(this, "ingest", props.ingest);
    this.ingest.allowInvoker("gateway", props.gatewayEmail);
    this.management = props.management;
    this.management.allowInvoker("gateway", props.gatewayEmail);
    const provider = props.beta;
    const api = new GoogleApiGatewayApi(this, "api", { provider, apiId: `${props.prefix}-api` });
    // `{path=**}`: API Gateway's double wildcard, any number of segments (it must come last).
    const management = Object.fromEntries(MANAGEMENT_METHODS.map((method) => [method, {
      operationId: `management${method[0]!.toUpperCase()}${method.slice(1)}`,
      parameters: [{ name: "path", in: "path", required: true, type: "string" }],
      "x-google-backend": { address: this.management.uri, path_translation: "APPEND_PATH_TO_ADDRESS", deadline: MANAGEMENT_DEADLINE },
      responses: { "200": { description: "the management API's answer (its own document: <management_url>/openapi.json)" } },
    }]));
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
        [`${GCP_MANAGEMENT_BASE_PATH}/{path=**}`]: management,
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
    this.managementUrl = `https://${gateway.defaultHostname}${GCP_MANAGEMENT_BASE_PATH}`;
  }
}
