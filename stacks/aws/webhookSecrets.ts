/**
 * Secrets Manager entries the functions read at cold start: the partners' signing secrets and,
 * when alerts go to a webhook, the alerts' signing secret, whose values Terraform never sets (set
 * them once with `aws secretsmanager put-secret-value`, see docs/clouds.md); and the management
 * API's admin token and the database secrets' encryption keys, which the stack generates at its
 * first apply through the write-only `secret_string_wo` (stacks/generatedSecrets.ts), so none of
 * these values lands in Terraform state. The database credentials are a separate secret that RDS
 * creates and rotates itself (see AuroraDatabase).
 */
import { Construct } from "constructs";
import { SecretsmanagerSecret } from "@cdktf/provider-aws/lib/secretsmanager-secret/index.js";
import { SecretsmanagerSecretVersion } from "@cdktf/provider-aws/lib/secretsmanager-secret-version/index.js";
import { generatedAdminToken, generatedEncryptionKeys, WRITE_ONLY_VERSION } from "../generatedSecrets.js";

export class WebhookSecrets extends Construct {
  /** JSON of inbound partners and their signing secrets (the local platform's PARTNERS format). */
  readonly partnerSecretsArn: string;
  /** The `whsec_…` secret the relay signs alerts to `alertWebhookUrl` with; only when that is set. */
  readonly alertSecretArn?: string;
  /** The management API's bootstrap admin token (the local ADMIN_TOKEN), as plain text. */
  readonly adminTokenSecretArn: string;
  /** ENCRYPTION_KEYS (`<keyId>:<base64 key>,…`), read by the functions that handle subscription secrets. */
  readonly encryptionKeysSecretArn: string;
  /** The generated first versions: a function reading a secret waits for its value. */
  readonly generated: SecretsmanagerSecretVersion[];

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
    const generated = (name: string, description: string, value: string) => {
      const secret = new SecretsmanagerSecret(this, name, { name: `${props.prefix}/${name}`, description, recoveryWindowInDays: 7 });
      const version = new SecretsmanagerSecretVersion(this, `${name}-initial`, {
        secretId: secret.id,
        secretStringWo: value,
        secretStringWoVersion: WRITE_ONLY_VERSION,
        // A value the operator puts later becomes AWSCURRENT; Terraform must not move the label back.
        lifecycle: { ignoreChanges: ["version_stages"] },
      });
      return { arn: secret.arn, version };
    };
    const admin = generated("admin-token", "Bootstrap admin token of the management API (Authorization: Bearer …); generated at the first apply", generatedAdminToken());
    const keys = generated("encryption-keys", "ENCRYPTION_KEYS: keys the database's secrets are encrypted with (keyId:base64, first one encrypts); generated at the first apply", generatedEncryptionKeys());
    this.adminTokenSecretArn = admin.arn;
    this.encryptionKeysSecretArn = keys.arn;
    this.generated = [admin.version, keys.version];
  }
}
