/**
 * What the three Function Apps run on: an Elastic Premium plan (VNet integration to reach the
 * private database, no cold-start-to-zero surprises) and the storage account the Functions
 * runtime needs for its leases and timer state. Claim-checks live in an account of their own
 * (claimCheckContainer.ts): this one's key is given to every app, so it must hold no payload.
 */
import { Construct } from "constructs";
import { ServicePlan } from "@cdktf/provider-azurerm/lib/service-plan/index.js";
import { StorageAccount } from "@cdktf/provider-azurerm/lib/storage-account/index.js";
import type { AzureScope } from "./privateNetwork.js";

export class FunctionHost extends Construct {
  readonly planId: string;
  readonly storageAccountName: string;
  readonly storageAccountKey: string;

  constructor(scope: Construct, id: string, props: AzureScope) {
    super(scope, id);
    const where = { resourceGroupName: props.resourceGroupName, location: props.location, tags: props.tags };
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
  }
}
