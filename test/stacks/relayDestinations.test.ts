/**
 * Issue 31 item 4: `relayDestinations` in the stack config becomes least-privilege grants for the
 * relay's identity alone, on exactly the resources listed, in each cloud's stack; none when the list
 * is empty. The grants are read from the synthesized Terraform JSON (terraformValidate.test.ts and
 * providerSchema.test.ts check the same resources against the providers' schemas).
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { TerraformJson } from "../../stacks/app.js";
import { loadStackConfig, StackConfigError } from "../../stacks/config.js";
import { allResources, references, resourceAt, resourcesOf } from "../../stacks/terraformJson.js";
import { synthStack } from "./synthFixture.js";

const SQS = "arn:aws:sqs:eu-west-1:123456789012:orders";
const SQS_FIFO = "arn:aws:sqs:eu-central-1:210987654321:ledger.fifo";
const SNS = "arn:aws:sns:eu-west-1:123456789012:order-events";
const BUS = "arn:aws:events:eu-west-1:123456789012:event-bus/orders";
const KEY = "arn:aws:kms:eu-central-1:210987654321:key/0b6e3a8c-1f2d-4e5a-9b7c-3d2e1f0a9b8c";
const SB_QUEUE = "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/acme-rg/providers/Microsoft.ServiceBus/namespaces/acme-events/queues/orders";
const SB_TOPIC = "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/acme-rg/providers/Microsoft.ServiceBus/namespaces/acme-events/topics/order-events";
const TOPIC_ELSEWHERE = "projects/acme-analytics/topics/orders";
const TOPIC_HERE = "order-events";
/** One list for all three stacks: each takes its own cloud's entries. */
const ALL = [SQS, { arn: SQS_FIFO, kmsKeyArn: KEY }, SNS, BUS, SB_QUEUE, SB_TOPIC, TOPIC_ELSEWHERE, TOPIC_HERE];

interface PolicyStatement { Effect: string; Action: string[]; Resource: string | string[]; Condition?: unknown }
const statements = (policy: unknown): PolicyStatement[] => (JSON.parse(String(policy)) as { Statement: PolicyStatement[] }).Statement;
const problemsOf = (value: unknown, fromEnv = false): string => {
  try {
    loadStackConfig(fromEnv ? {} : { relayDestinations: value }, fromEnv ? { WEBHOOKS_RELAY_DESTINATIONS: String(value) } : {});
  } catch (e) {
    expect(e).toBeInstanceOf(StackConfigError);
    return (e as Error).message;
  }
  return "";
};

describe("relayDestinations in the stack config", () => {
  it("is empty by default, and reads each cloud's forms from cdktf.json", () => {
    expect(loadStackConfig({}, {}).relayDestinations).toEqual([]);
    expect(loadStackConfig({ gcpProject: "acme-hooks", relayDestinations: ALL }, {}).relayDestinations).toEqual([
      { cloud: "aws", kind: "sqs", arn: SQS },
      { cloud: "aws", kind: "sqs", arn: SQS_FIFO, kmsKeyArn: KEY },
      { cloud: "aws", kind: "sns", arn: SNS },
      { cloud: "aws", kind: "eventbridge", arn: BUS },
      { cloud: "azure", kind: "servicebus", entity: "queue", resourceId: SB_QUEUE },
      { cloud: "azure", kind: "servicebus", entity: "topic", resourceId: SB_TOPIC },
      { cloud: "gcp", kind: "pubsub", project: "acme-analytics", topic: "orders" },
      { cloud: "gcp", kind: "pubsub", topic: TOPIC_HERE },
    ]);
  });

  it("takes WEBHOOKS_RELAY_DESTINATIONS as a JSON array or as entries separated by commas", () => {
    expect(loadStackConfig({}, { WEBHOOKS_RELAY_DESTINATIONS: `${SQS}, ${SNS}` }).relayDestinations.map((d) => d.kind)).toEqual(["sqs", "sns"]);
    expect(loadStackConfig({}, { WEBHOOKS_RELAY_DESTINATIONS: JSON.stringify([{ arn: SQS_FIFO, kmsKeyArn: KEY }]) }).relayDestinations).toEqual([{ cloud: "aws", kind: "sqs", arn: SQS_FIFO, kmsKeyArn: KEY }]);
    expect(problemsOf(`[${SQS}]`, true)).toMatch(/relayDestinations \(from WEBHOOKS_RELAY_DESTINATIONS\): starts with "\[" but is not JSON/);
  });

  it("refuses, naming the entry and the form it expects: wildcards, unknown forms, aliases, misplaced keys, duplicates", () => {
    expect(problemsOf(["arn:aws:sqs:eu-west-1:123456789012:*"])).toContain("entry 0: \"arn:aws:sqs:eu-west-1:123456789012:*\" has a wildcard: name each queue");
    expect(problemsOf(["arn:aws:sqs:eu-west-1:1234:orders"])).toContain("entry 0: \"arn:aws:sqs:eu-west-1:1234:orders\" is not an SQS queue, SNS topic or EventBridge bus ARN");
    expect(problemsOf(["arn:aws:s3:::bucket"])).toContain("is not an SQS queue, SNS topic or EventBridge bus ARN");
    expect(problemsOf([SQS, "https://example.com/hook"])).toMatch(/entry 1: "https:\/\/example.com\/hook" is none of an SQS queue, SNS topic or EventBridge bus ARN/);
    expect(problemsOf(["/subscriptions/x/resourceGroups/rg/providers/Microsoft.ServiceBus/namespaces/acme-events/queues/orders"])).toContain("is not a Service Bus queue or topic resource id");
    expect(problemsOf(["projects/acme-analytics/topics/goog-x"])).toContain("is not a Pub/Sub topic");
    expect(problemsOf([{ arn: SQS, kmsKeyArn: "arn:aws:kms:eu-west-1:123456789012:alias/orders" }])).toContain("is an alias: IAM matches kms:GenerateDataKey and kms:Decrypt on the key's own ARN");
    expect(problemsOf([{ arn: BUS, kmsKeyArn: KEY }])).toContain("EventBridge uses a bus's key itself");
    expect(problemsOf([{ arn: SB_QUEUE, kmsKeyArn: KEY }])).toContain('"kmsKeyArn" is for an SQS queue or SNS topic ARN');
    expect(problemsOf([{ arn: SQS, key: KEY }])).toContain('entry 0: unknown field key: an object entry has "arn" and "kmsKeyArn" only');
    expect(problemsOf([SB_QUEUE, SB_QUEUE.toLowerCase()])).toContain("entry 1 names the same resource as entry 0: list each once");
    expect(problemsOf({ sqs: SQS })).toContain("relayDestinations (from cdktf.json context.webhooks.relayDestinations): a list of destinations");
    // Every bad entry at once, not only the first.
    const several = problemsOf(["nope!", SQS, 42]);
    expect(several).toContain("entry 0:");
    expect(several).toContain("entry 2: 42 is none of");
  });
});

describe("AWS: the relay's role may send to exactly the queues, topics and buses listed", () => {
  let json: TerraformJson;
  let bare: TerraformJson;
  beforeAll(() => {
    json = synthStack("aws", { relayDestinations: ALL });
    bare = synthStack("aws");
  });

  it("one inline policy on the relay role: SendMessage, Publish and PutEvents on the ARNs, the key only through SQS in its region", () => {
    const policy = resourceAt(json, "aws_iam_role_policy", "identities/relay-destinations-policy");
    expect(references(policy.body.role, resourceAt(json, "aws_iam_role", "identities/relay-role"), "id")).toBe(true);
    expect(statements(policy.body.policy)).toEqual([
      { Effect: "Allow", Action: ["sqs:SendMessage"], Resource: [SQS, SQS_FIFO] },
      { Effect: "Allow", Action: ["sns:Publish"], Resource: [SNS] },
      { Effect: "Allow", Action: ["events:PutEvents"], Resource: [BUS] },
      { Effect: "Allow", Action: ["kms:GenerateDataKey", "kms:Decrypt"], Resource: KEY, Condition: { StringEquals: { "kms:ViaService": "sqs.eu-central-1.amazonaws.com" } } },
    ]);
    // The relay function waits for its grant, as for its other policies.
    const relay = resourceAt(json, "aws_lambda_function", "relay/relay/function");
    expect(relay.body.depends_on).toContain(`${policy.type}.${policy.name}`);
  });

  it("no other role gets a destination's ARN, and no other policy changes", () => {
    const others = resourcesOf(json, "aws_iam_role_policy").filter((p) => !p.path.endsWith("identities/relay-destinations-policy"));
    for (const p of others) {
      for (const arn of [SQS, SQS_FIFO, SNS, BUS, KEY]) expect(String(p.body.policy), p.path).not.toContain(arn);
    }
    const policies = (j: TerraformJson) => Object.fromEntries(resourcesOf(j, "aws_iam_role_policy").filter((p) => !p.path.endsWith("relay-destinations-policy")).map((p) => [p.path, p.body.policy]));
    expect(policies(json)).toEqual(policies(bare));
  });

  it("an empty list adds no policy at all, and the relay role's ARN is an output either way", () => {
    expect(resourcesOf(bare, "aws_iam_role_policy").filter((p) => p.path.includes("destinations"))).toEqual([]);
    for (const j of [json, bare]) expect(references(j.output?.relay_role_arn?.value, resourceAt(j, "aws_iam_role", "identities/relay-role"), "arn")).toBe(true);
  });

  it("a key that encrypts an SQS queue and an SNS topic is usable through both services, each in its region", () => {
    const both = synthStack("aws", { relayDestinations: [{ arn: SQS_FIFO, kmsKeyArn: KEY }, { arn: "arn:aws:sns:eu-central-1:210987654321:audit", kmsKeyArn: KEY }] });
    const kms = statements(resourceAt(both, "aws_iam_role_policy", "identities/relay-destinations-policy").body.policy).filter((s) => s.Action.includes("kms:Decrypt"));
    expect(kms).toEqual([{ Effect: "Allow", Action: ["kms:GenerateDataKey", "kms:Decrypt"], Resource: KEY, Condition: { StringEquals: { "kms:ViaService": ["sqs.eu-central-1.amazonaws.com", "sns.eu-central-1.amazonaws.com"] } } }]);
  });
});

describe("Azure: the relay's managed identity is a Data Sender on exactly the queues and topics listed", () => {
  let json: TerraformJson;
  let bare: TerraformJson;
  beforeAll(() => {
    json = synthStack("azure", { relayDestinations: ALL });
    bare = synthStack("azure");
  });

  it("one role assignment per entry, the relay's principal, the entity's own scope", () => {
    const relay = resourceAt(json, "azurerm_user_assigned_identity", "identities/relay-identity");
    const onDestinations = resourcesOf(json, "azurerm_role_assignment").filter((g) => g.body.scope === SB_QUEUE || g.body.scope === SB_TOPIC);
    expect(onDestinations.map((g) => g.body.scope)).toEqual([SB_QUEUE, SB_TOPIC]);
    for (const g of onDestinations) {
      expect(g.body.role_definition_name).toBe("Azure Service Bus Data Sender");
      expect(references(g.body.principal_id, relay, "principal_id"), g.path).toBe(true);
    }
    expect(references(json.output?.relay_identity_principal_id?.value, relay, "principal_id")).toBe(true);
  });

  it("the relay app starts after the grants propagated; the other identities are unchanged", () => {
    const sleep = resourcesOf(json, "time_sleep").find((t) => t.component === "identities")!;
    const grants = resourcesOf(json, "azurerm_role_assignment").filter((g) => g.body.scope === SB_QUEUE || g.body.scope === SB_TOPIC);
    for (const g of grants) expect(sleep.body.depends_on).toContain(`${g.type}.${g.name}`);
    const assignments = (j: TerraformJson) => resourcesOf(j, "azurerm_role_assignment").filter((g) => g.body.scope !== SB_QUEUE && g.body.scope !== SB_TOPIC).map((g) => [g.path, g.body]);
    expect(assignments(json)).toEqual(assignments(bare));
  });

  it("an empty list assigns nothing outside the stack's own resources", () => {
    for (const g of resourcesOf(bare, "azurerm_role_assignment")) expect(String(g.body.scope)).toMatch(/^\$\{/);
  });
});

describe("GCP: the relay's service account may publish to exactly the topics listed", () => {
  let json: TerraformJson;
  let bare: TerraformJson;
  beforeAll(() => {
    json = synthStack("gcp", { relayDestinations: ALL });
    bare = synthStack("gcp");
  });

  it("roles/pubsub.publisher on each topic, another project's by its full name, a bare name in gcpProject", () => {
    const grants = allResources(json).filter((r) => r.component === "destinations");
    expect(grants.map((g) => [g.type, g.body.topic, g.body.role])).toEqual([
      ["google_pubsub_topic_iam_member", TOPIC_ELSEWHERE, "roles/pubsub.publisher"],
      ["google_pubsub_topic_iam_member", "projects/hooks-test-project/topics/order-events", "roles/pubsub.publisher"],
    ]);
    const relayAccount = resourceAt(json, "google_service_account", "identities/relay");
    for (const g of grants) expect(g.body.member).toBe(`serviceAccount:\${${relayAccount.type}.${relayAccount.name}.email}`);
    const relay = resourceAt(json, "google_cloudfunctions2_function", "relay/relay/function");
    for (const g of grants) expect(relay.body.depends_on).toContain(`${g.type}.${g.name}`);
    expect(references(json.output?.relay_service_account?.value, relayAccount, "email")).toBe(true);
  });

  it("an empty list grants nothing, and the relay keeps its other dependencies", () => {
    expect(allResources(bare).filter((r) => r.component === "destinations")).toEqual([]);
    const deps = (j: TerraformJson) => (resourceAt(j, "google_cloudfunctions2_function", "relay/relay/function").body.depends_on as string[]).filter((d) => !d.includes("destinations"));
    expect(deps(json)).toEqual(deps(bare));
  });
});
