/**
 * Claim-check storage for bodies larger than a Service Bus message: a private blob container in
 * the functions' storage account, reached by the functions' identities only (role assignments
 * scoped to the container), with blobs deleted once no message can still point at them.
 */
import { Construct } from "constructs";
import { StorageContainer } from "@cdktf/provider-azurerm/lib/storage-container/index.js";
import { StorageManagementPolicy } from "@cdktf/provider-azurerm/lib/storage-management-policy/index.js";
import type { StackConfig } from "../config.js";

export const CLAIM_CHECK_CONTAINER = "claim-checks";

export class ClaimCheckContainer extends Construct {
  readonly accountUrl: string;
  /** Role-assignment scope: the container only. */
  readonly scope: string;

  constructor(scope: Construct, id: string, props: { config: StackConfig; storageAccountId: string; blobEndpoint: string }) {
    super(scope, id);
    // storage_account_id (not _name): the container is managed through Resource Manager, and
    // its id is the ARM id a role assignment can be scoped to.
    const container = new StorageContainer(this, "container", {
      name: CLAIM_CHECK_CONTAINER,
      storageAccountId: props.storageAccountId,
      containerAccessType: "private",
    });
    new StorageManagementPolicy(this, "expiry", {
      storageAccountId: props.storageAccountId,
      rule: [
        {
          name: "expire-claim-checks",
          enabled: true,
          filters: { blobTypes: ["blockBlob"], prefixMatch: [`${CLAIM_CHECK_CONTAINER}/`] },
          actions: { baseBlob: { deleteAfterDaysSinceCreationGreaterThan: props.config.queueRetentionDays + props.config.deadLetterRetentionDays } },
        },
      ],
    });
    this.accountUrl = props.blobEndpoint;
    this.scope = container.id;
  }
}
