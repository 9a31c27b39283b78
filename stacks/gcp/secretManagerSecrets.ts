/**
 * Secret Manager secrets, read by the functions as secret environment variables (resolved by
 * the platform at start, never plain values). The partner secret gets an empty `{}` first
 * version so functions can deploy; the operator adds the real version
 * (`gcloud secrets versions add`), which Terraform then leaves alone.
 */
import { Construct } from "constructs";
import { SecretManagerSecret } from "@cdktf/provider-google/lib/secret-manager-secret/index.js";
import { SecretManagerSecretIamMember } from "@cdktf/provider-google/lib/secret-manager-secret-iam-member/index.js";
import { SecretManagerSecretVersion } from "@cdktf/provider-google/lib/secret-manager-secret-version/index.js";

export class SecretManagerSecrets extends Construct {
  readonly partnerSecret: SecretManagerSecret;
  /** Functions read "latest" at deploy time, so they wait for the first version. */
  readonly partnerSecretVersion: SecretManagerSecretVersion;

  constructor(scope: Construct, id: string, private readonly props: { prefix: string }) {
    super(scope, id);
    this.partnerSecret = this.secret("partner-signing-secrets");
    this.partnerSecretVersion = new SecretManagerSecretVersion(this, "partner-signing-secrets-initial", {
      secret: this.partnerSecret.id,
      secretData: "{}",
      lifecycle: { ignoreChanges: ["secret_data", "enabled"] },
    });
  }

  /** A secret with automatic replication. */
  secret(name: string): SecretManagerSecret {
    return new SecretManagerSecret(this, name, { secretId: `${this.props.prefix}-${name}`, replication: { auto: {} } });
  }

  /** Lets one service account read one secret; a function using it must depend on the grant. */
  allow(secret: SecretManagerSecret, who: string, serviceAccountEmail: string): SecretManagerSecretIamMember {
    return new SecretManagerSecretIamMember(this, `${secret.node.id}-${who}`, {
      secretId: secret.id,
      role: "roles/secretmanager.secretAccessor",
      member: `serviceAccount:${serviceAccountEmail}`,
    });
  }
}
