/**
 * Key Vault with RBAC authorization and purge protection. Functions read secrets through Key
 * Vault references (`@Microsoft.KeyVault(...)` app settings) with their managed identity, so no
 * secret value is an app setting. The partner signing secrets and the alert signing secret are
 * set by the operator (`az keyvault secret set`), never by Terraform, so they stay out of
 * Terraform state. The management API's admin token and the database secrets' encryption keys
 * are generated at the first apply and written through the write-only `value_wo`
 * (stacks/generatedSecrets.ts): not in Terraform state either. Terraform writes a secret only after the deployer's role has had time to
 * propagate (rbacPropagation.ts): a first apply would otherwise meet 403.
 */
import { Construct } from "constructs";
import { DataAzurermClientConfig } from "@cdktf/provider-azurerm/lib/data-azurerm-client-config/index.js";
import { KeyVault } from "@cdktf/provider-azurerm/lib/key-vault/index.js";
import { KeyVaultSecret } from "@cdktf/provider-azurerm/lib/key-vault-secret/index.js";
import { RoleAssignment } from "@cdktf/provider-azurerm/lib/role-assignment/index.js";
import type { AzureScope } from "./privateNetwork.js";
import { RbacPropagation } from "./rbacPropagation.js";
import { generatedAdminToken, generatedEncryptionKeys, WRITE_ONLY_VERSION } from "../generatedSecrets.js";

export const PARTNER_SECRETS_NAME = "partner-signing-secrets";
/** The secret the relay signs its `alert.*` events with (ALERT_WEBHOOK_SECRET); the operator fills it. */
export const ALERT_SECRET_NAME = "alert-webhook-secret";
/** What the alert secret holds until the operator sets it: a well-formed key of 32 zero bytes. */
export const PLACEHOLDER_ALERT_SECRET = `whsec_${Buffer.alloc(32).toString("base64")}`;
/** The management API's bootstrap admin token (ADMIN_TOKEN), generated at the first apply. */
export const ADMIN_TOKEN_SECRET_NAME = "admin-token";
/** ENCRYPTION_KEYS of the subscriptions' secrets (issue 17), generated at the first apply. */
export const ENCRYPTION_KEYS_SECRET_NAME = "encryption-keys";

export class KeyVaultSecrets extends Construct {
  readonly vault: KeyVault;
  /** Terraform writes secrets only once the deployer's Key Vault role has propagated: depend on this. */
  readonly writable: RbacPropagation["done"];
  readonly partnerSecret: KeyVaultSecret;
  readonly alertSecret: KeyVaultSecret;
  readonly adminTokenSecret: KeyVaultSecret;
  readonly encryptionKeysSecret: KeyVaultSecret;

  constructor(scope: Construct, id: string, props: AzureScope) {
    super(scope, id);
    const client = new DataAzurermClientConfig(this, "client");
    this.vault = new KeyVault(this, "vault", {
      name: `${props.prefix}-kv`,
      resourceGroupName: props.resourceGroupName,
      location: props.location,
      tenantId: client.tenantId,
      skuName: "standard",
      rbacAuthorizationEnabled: true,
      purgeProtectionEnabled: true,
      softDeleteRetentionDays: 90,
      networkAcls: { defaultAction: "Allow", bypass: "AzureServices" },
      tags: props.tags,
    });
    const deployerAccess = new RoleAssignment(this, "deployer", {
      scope: this.vault.id,
      roleDefinitionName: "Key Vault Secrets Officer",
      principalId: client.objectId,
    });
    this.writable = new RbacPropagation(this, "deployer-propagation", [deployerAccess]).done;
    // Placeholders the operator overwrites; Terraform never reads or resets their values.
    const operatorSecret = (id: string, name: string, contentType: string, value: string) =>
      new KeyVaultSecret(this, id, {
        name,
        keyVaultId: this.vault.id,
        contentType,
        value,
        tags: props.tags,
        lifecycle: { ignoreChanges: ["value", "content_type", "tags"] },
        dependsOn: [this.writable],
      });
    this.partnerSecret = operatorSecret("partner-secrets", PARTNER_SECRETS_NAME, "application/json", "{}");
    // A placeholder of the right shape (the relay refuses to start on a malformed secret) whose key
    // is all zeros: anyone can compute it, so no receiver should accept it. Replace it before use.
    this.alertSecret = operatorSecret("alert-secret", ALERT_SECRET_NAME, "text/plain", PLACEHOLDER_ALERT_SECRET);
    // Sent once, never kept in state; a version the operator sets later is the one read (latest).
    const generatedSecret = (id: string, name: string, value: string) =>
      new KeyVaultSecret(this, id, {
        name,
        keyVaultId: this.vault.id,
        contentType: "text/plain",
        valueWo: value,
        valueWoVersion: WRITE_ONLY_VERSION,
        tags: props.tags,
        lifecycle: { ignoreChanges: ["content_type", "tags"] },
        dependsOn: [this.writable],
      });
    this.adminTokenSecret = generatedSecret("admin-token", ADMIN_TOKEN_SECRET_NAME, generatedAdminToken());
    this.encryptionKeysSecret = generatedSecret("encryption-keys", ENCRYPTION_KEYS_SECRET_NAME, generatedEncryptionKeys());
  }

  /** `@Microsoft.KeyVault(...)` reference to the latest version of a secret. */
  reference(secretName: string): string {
    return `@Microsoft.KeyVault(VaultName=${this.vault.name};SecretName=${secretName})`;
  }

  /** Role-assignment scope of one secret (its ARM id), for per-secret read access. */
  static scopeOf(secret: KeyVaultSecret): string {
    return secret.resourceVersionlessId;
  }
}
