/**
 * Secrets Manager entries the functions read at cold start. Terraform creates the secret but
 * never its value, so no signing secret lands in Terraform state: set it once with
 * `aws secretsmanager put-secret-value` (see docs/clouds.md). The database credentials are a
 * separate secret that RDS creates and rotates itself (see AuroraDatabase).
 */
import { Construct } from "constructs";
import { SecretsmanagerSecret } from "@cdktf/provider-aws/lib/secretsmanager-secret/index.js";

export class WebhookSecrets extends Construct {
  /** JSON of inbound partners and their signing secrets (the local platform's PARTNERS format). */
  readonly partnerSecretsArn: string;

  constructor(scope: Construct, id: string, props: { prefix: string }) {
    super(scope, id);
    const partners = new SecretsmanagerSecret(this, "partner-secrets", {
      name: `${props.prefix}/partner-signing-secrets`,
      description: "Inbound partners and their webhook signing secrets (JSON)",
      recoveryWindowInDays: 7,
    });
    this.partnerSecretsArn = partners.arn;
  }
}
