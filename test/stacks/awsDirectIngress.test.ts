import { beforeAll, describe, expect, it } from "vitest";
import type { TerraformJson } from "../../stacks/app.js";
import { DIRECT_MODE_HEADERS } from "../../stacks/aws/httpIngress.js";
import { block, references, resourceAt, resourcesOf } from "../../stacks/terraformJson.js";
import { synthStack } from "./synthFixture.js";

let json: TerraformJson;
beforeAll(() => {
  json = synthStack("aws", { awsDirectQueueIngress: "true" });
});

describe("AWS stack, direct API Gateway → SQS mode", () => {
  it("sends the body to the queue with the SQS-SendMessage integration and no ingest Lambda", () => {
    const integration = resourceAt(json, "aws_apigatewayv2_integration", "ingress/integration").body;
    expect(integration.integration_subtype).toBe("SQS-SendMessage");
    const params = integration.request_parameters as Record<string, string>;
    expect(references(params.QueueUrl, resourceAt(json, "aws_sqs_queue", "queue/queue"), "url")).toBe(true);
    expect(params.MessageBody).toBe("$request.body");
    expect(resourcesOf(json, "aws_lambda_function").map((f) => f.body.function_name).sort()).toEqual(["hooktest-management", "hooktest-migrate", "hooktest-processor", "hooktest-relay"]);
  });

  it("carries the partner and the signature headers as message attributes, escaped for Terraform", () => {
    const params = resourceAt(json, "aws_apigatewayv2_integration", "ingress/integration").body.request_parameters as Record<string, string>;
    const attributes = JSON.parse(params.MessageAttributes!) as Record<string, { StringValue: string }>;
    expect(attributes.partner!.StringValue).toBe("$${request.path.partner}");
    for (const header of DIRECT_MODE_HEADERS) expect(attributes[header]!.StringValue).toBe(`$\${request.header.${header}}`);
  });

  it("uses an API Gateway role that may only send to the queue, and tells the processor to verify", () => {
    const integration = resourceAt(json, "aws_apigatewayv2_integration", "ingress/integration").body;
    const role = resourcesOf(json, "aws_iam_role").find((r) => references(integration.credentials_arn, r, "arn"))!;
    expect(String(role.body.assume_role_policy)).toContain("apigateway.amazonaws.com");
    const policy = resourcesOf(json, "aws_iam_role_policy").find((p) => String(p.body.role).includes(role.name))!;
    const queue = resourceAt(json, "aws_sqs_queue", "queue/queue");
    expect(JSON.parse(String(policy.body.policy)).Statement).toEqual([
      { Effect: "Allow", Action: ["sqs:SendMessage"], Resource: `\${${queue.type}.${queue.name}.arn}` },
    ]);
    const env = block(resourceAt(json, "aws_lambda_function", "workers/processor/function").body.environment).variables as Record<string, string>;
    expect(env.WEBHOOKS_VERIFY_IN_PROCESSOR).toBe("true");
  });
});
