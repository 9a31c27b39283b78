/**
 * Claim-check storage for bodies larger than a Service Bus message: a storage account of its own
 * with shared-key access disabled (no account key or SAS can reach it, so it is Entra ID only), a
 * private container, and blobs deleted once no message can still point at them. Only the roles
 * scoped to the container open it: ingest writes, the processor reads, the relay has none.
 *
 * Not the Functions runtime's account: that one's key is given to every app (Elastic Premium
 * mounts its content share with it), and a key bypasses every container-scoped role.
 */
import { Construct } from "constructs";
import { StorageAccount } from "@cdktf/provider-azurerm/lib/storage-account/index.js";
import { StorageContainer } from "@cdktf/provider-azurerm/lib/storage-container/index.js";
import { StorageManagementPolicy } from "@cdktf/provider-azurerm/lib/storage-management-policy/index.js";
import type { StackConfig } from "../config.js";
import type { AzureScope } from "./privateNetwork.js";

export const CLAIM_CHECK_CONTAINER = "claim-checks";

export class ClaimCheckContainer extends Construct {
  readonly accountUrl: string;
  /** Role-assignment scope: the container only. */
  readonly scope: string;

  constructor(scope: Construct, id: string, props: AzureScope & { config: StackConfig }) {
    super(scope, id);
    const account = new StorageAccount(this, "account", {
      name: `${props.prefix.replace(/-/g, "")}claimchecks`,
      resourceGroupName: props.resourceGroupName,
      location: props.location,
      accountTier: "Standard",
      accountReplicationType: "LRS",
      minTlsVersion: "TLS1_2",
      httpsTrafficOnlyEnabled: true,
      allowNestedItemsToBePublic: false,
      infrastructureEncryptionEnabled: true,
      sharedAccessKeyEnabled: false,
      // The portal and az CLI then use Entra ID for this account's data too.
      defaultToOauthAuthentication: true,
      tags: props.tags,
    });
    // storage_account_id (not _name): the container is managed through Resource Manager, which
    // needs no key (the account has none to offer), and its id is the ARM id a role can be scoped to.
    const container = new StorageContainer(this, "container", {
      name: CLAIM_CHECK_CONTAINER,
      storageAccountId: account.id,
      containerAccessType: "private",
    });
    new StorageManagementPolicy(this, "expiry", {
      storageAccountId: account.id,
      rule: [
        {
          name: "expire-claim-checks",
          enabled: true,
          filters: { blobTypes: ["blockBlob"], prefixMatch: [`${CLAIM_CHECK_CONTAINER}/`] },
          actions: { baseBlob: { deleteAfterDaysSinceCreationGreaterThan: props.config.queueRetentionDays + props.config.deadLetterRetentionDays } },
        },
      ],
    });
    this.accountUrl = account.primaryBlobEndpoint;
    this.scope = container.id;
  }
}
