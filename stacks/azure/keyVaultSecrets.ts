/**
 * Key Vault with RBAC authorization and purge protection. Functions read secrets through Key
 * Vault references (`@Microsoft.KeyVault(...)` app settings) with their managed identity, so no
 * secret value is an app setting. The partner signing secrets are set by the operator
 * (`az keyvault secret set`), never by Terraform, so they stay out of Terraform state.
 */
import { Construct } from "constructs";
import { DataAzurermClientConfig } from "@cdktf/provider-azurerm/lib/data-azurerm-client-config/index.js";
import { KeyVault } from "@cdktf/provider-azurerm/lib/key-vault/index.js";
import { KeyVaultSecret } from "@cdktf/provider-azurerm/lib/key-vault-secret/index.js";
import { RoleAssignment } from "@cdktf/provider-azurerm/lib/role-assignment/index.js";
import type { AzureScope } from "./privateNetwork.js";

export const PARTNER_SECRETS_NAME = "partner-signing-secrets";

export class KeyVaultSecrets extends Construct {
  readonly vault: KeyVault;
  /** Terraform writes the database URL secret; it needs this role first. */
  readonly deployerAccess: RoleAssignment;
  readonly partnerSecret: KeyVaultSecret;

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
    });
    this.deployerAccess = new RoleAssignment(this, "deployer", {
      scope: this.vault.id,
      roleDefinitionName: "Key Vault Secrets Officer",
      principalId: client.objectId,
    });
    this.partnerSecret = new KeyVaultSecret(this, "partner-secrets", {
      name: PARTNER_SECRETS_NAME,
      keyVaultId: this.vault.id,
      contentType: "application/json",
      value: "{}",
      lifecycle: { ignoreChanges: ["value", "content_type", "tags"] },
      dependsOn: [this.deployerAccess],
    });
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
