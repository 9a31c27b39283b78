import { beforeAll, describe, expect, it } from "vitest";
import type { TerraformJson } from "../../stacks/app.js";
import type { Cloud } from "../../stacks/artifacts.js";
import { renderSecurityReport, securityReport } from "../../stacks/securityCheck.js";
import { evaluate, JUSTIFICATIONS, RULES } from "../../stacks/securityRules.js";
import { resourceAt, resourcesOf } from "../../stacks/terraformJson.js";
import { synthAll } from "./synthFixture.js";

let stacks: Record<Cloud, TerraformJson>;
beforeAll(() => {
  stacks = synthAll();
});

const clone = (json: TerraformJson): TerraformJson => structuredClone(json);
const verdictOf = (cloud: Cloud, json: TerraformJson, rule: string) => evaluate(cloud, json).filter((f) => f.rule === rule).map((f) => f.verdict);

describe("security check over the synthesized stacks", () => {
  it("passes or justifies every rule on every resource, with no stale justification", () => {
    const report = securityReport(stacks);
    expect(report.findings.filter((f) => f.verdict === "FAIL")).toEqual([]);
    expect(report.stale).toEqual([]);
    expect(report.ok).toBe(true);
    expect(renderSecurityReport(report)).toMatch(/\d+ pass, \d+ justified, 0 failed/);
  });

  it("covers the rules the issue names, and they pass outright (not by justification)", () => {
    const mustPass = [
      "aws-sqs-encrypted", "aws-aurora-encrypted", "aws-aurora-not-public", "aws-aurora-tls", "aws-apigw-access-logs", "aws-iam-scoped",
      "az-servicebus-min-tls", "az-servicebus-local-auth-off", "az-postgres-not-public", "az-postgres-tls", "az-keyvault-purge-protection",
      "gcp-sql-ssl-mode", "gcp-sql-no-public-ip", "gcp-pubsub-dead-letter-grants", "gcp-run-no-public-invoker",
    ];
    const report = securityReport(stacks);
    for (const rule of mustPass) {
      const verdicts = report.findings.filter((f) => f.rule === rule).map((f) => f.verdict);
      expect(verdicts.length, rule).toBeGreaterThan(0);
      expect(new Set(verdicts), rule).toEqual(new Set(["pass"]));
      expect(JUSTIFICATIONS[rule], rule).toBeUndefined();
    }
  });

  it("fails an unencrypted SQS queue and a public Aurora instance", () => {
    const json = clone(stacks.aws);
    resourceAt(json, "aws_sqs_queue", "queue/dlq").body.sqs_managed_sse_enabled = false;
    resourcesOf(json, "aws_rds_cluster_instance")[0]!.body.publicly_accessible = true;
    expect(verdictOf("aws", json, "aws-sqs-encrypted")).toContain("FAIL");
    expect(verdictOf("aws", json, "aws-aurora-not-public")).toEqual(["FAIL"]);
    expect(securityReport({ aws: json }).ok).toBe(false);
  });

  it("fails a wildcard IAM action and a wildcard resource on a data action", () => {
    const json = clone(stacks.aws);
    const [first, second] = resourcesOf(json, "aws_iam_role_policy");
    first!.body.policy = JSON.stringify({ Statement: [{ Effect: "Allow", Action: ["sqs:*"], Resource: "arn:aws:sqs:x" }] });
    second!.body.policy = JSON.stringify({ Statement: [{ Effect: "Allow", Action: ["secretsmanager:GetSecretValue"], Resource: "*" }] });
    expect(verdictOf("aws", json, "aws-iam-scoped").filter((v) => v === "FAIL")).toHaveLength(2);
  });

  it("fails Service Bus with SAS auth on, Cloud SQL with a public IP, Key Vault without purge protection", () => {
    const azure = clone(stacks.azure);
    resourcesOf(azure, "azurerm_servicebus_namespace")[0]!.body.local_auth_enabled = true;
    resourcesOf(azure, "azurerm_key_vault")[0]!.body.purge_protection_enabled = false;
    expect(verdictOf("azure", azure, "az-servicebus-local-auth-off")).toEqual(["FAIL"]);
    expect(verdictOf("azure", azure, "az-keyvault-purge-protection")).toEqual(["FAIL"]);
    const gcp = clone(stacks.gcp);
    const settings = (resourcesOf(gcp, "google_sql_database_instance")[0]!.body.settings as Record<string, Record<string, unknown>>);
    settings.ip_configuration!.ipv4_enabled = true;
    expect(verdictOf("gcp", gcp, "gcp-sql-no-public-ip")).toEqual(["FAIL"]);
  });

  it("fails a dead-letter policy whose service-agent grant is missing", () => {
    const gcp = clone(stacks.gcp);
    delete gcp.resource!.google_pubsub_subscription_iam_member;
    expect(verdictOf("gcp", gcp, "gcp-pubsub-dead-letter-grants")).toContain("FAIL");
  });

  it("reports a justification as stale once its rule passes", () => {
    const json = clone(stacks.aws);
    for (const q of resourcesOf(json, "aws_sqs_queue")) q.body.kms_master_key_id = "alias/webhooks";
    expect(securityReport({ aws: json }).stale).toContain("aws-sqs-cmk");
  });

  it("has a justification only for rules that exist", () => {
    const ids = new Set(RULES.map((r) => r.id));
    for (const id of Object.keys(JUSTIFICATIONS)) expect(ids.has(id), id).toBe(true);
  });
});
