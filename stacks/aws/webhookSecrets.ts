/**
 * Secrets Manager entries the functions read at cold start: the partners' signing secrets and,
 * when alerts go to a webhook, the alerts' signing secret. Terraform creates each secret but
 * never its value, so no signing secret lands in Terraform state: set it once with
 * `aws secretsmanager put-secret-value` (see docs/clouds.md). The database credentials are a
 * separate secret that RDS creates and rotates itself (see AuroraDatabase).
 */
import { Construct } from "constructs";
import { SecretsmanagerSecret } from "@cdktf/provider-aws/lib/secretsmanager-secret/index.js";

export class WebhookSecrets extends Construct {
  /** JSON of inbound partners and their signing secrets (the local platform's PARTNERS format). */
  readonly partnerSecretsArn: string;
  /** The `whsec_…` secret the relay signs alerts to `alertWebhookUrl` with; only when that is set. */
  readonly alertSecretArn?: string;

  constructor(scope: Construct, id: string, props: { prefix: string; alertWebhook: boolean }) {
    super(scope, id);
    const partners = new SecretsmanagerSecret(this, "partner-secrets", {
      name: `${props.prefix}/partner-signing-secrets`,
      description: "Inbound partners and their webhook signing secrets (JSON)",
      recoveryWindowInDays: 7,
    });
    this.partnerSecretsArn = partners.arn;
    if (props.alertWebhook) {
      const alert = new SecretsmanagerSecret(this, "alert-webhook-secret", {
        name: `${props.prefix}/alert-webhook-secret`,
        description: "Signing secret (whsec_…) of the alerts sent to alertWebhookUrl; the receiver verifies with it",
        recoveryWindowInDays: 7,
      });
      this.alertSecretArn = alert.arn;
    }
  }
}
