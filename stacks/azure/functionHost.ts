/**
 * What the three Function Apps run on: an Elastic Premium plan (VNet integration to reach the
 * private database, no cold-start-to-zero surprises) and the storage account the Functions
 * runtime needs for its leases and timer state (which also holds the claim-check container).
 */
import { Construct } from "constructs";
import { ServicePlan } from "@cdktf/provider-azurerm/lib/service-plan/index.js";
import { StorageAccount } from "@cdktf/provider-azurerm/lib/storage-account/index.js";
import type { AzureScope } from "./privateNetwork.js";

export class FunctionHost extends Construct {
  readonly planId: string;
  readonly storageAccountName: string;
  readonly storageAccountKey: string;
  readonly storageAccountId: string;
  readonly blobEndpoint: string;

  constructor(scope: Construct, id: string, props: AzureScope) {
    super(scope, id);
    const where = { resourceGroupName: props.resourceGroupName, location: props.location };
    const plan = new ServicePlan(this, "plan", { ...where, name: `${props.prefix}-functions`, osType: "Linux", skuName: "EP1" });
    const storage = new StorageAccount(this, "storage", {
      ...where,
      name: `${props.prefix.replace(/-/g, "")}fnstate`,
      accountTier: "Standard",
      accountReplicationType: "LRS",
      minTlsVersion: "TLS1_2",
      httpsTrafficOnlyEnabled: true,
      allowNestedItemsToBePublic: false,
      infrastructureEncryptionEnabled: true,
    });
    this.planId = plan.id;
    this.storageAccountName = storage.name;
    this.storageAccountKey = storage.primaryAccessKey;
    this.storageAccountId = storage.id;
    this.blobEndpoint = storage.primaryBlobEndpoint;
  }
}
