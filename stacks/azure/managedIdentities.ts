/**
 * One user-assigned identity per function, and the role assignments that are all it may do:
 * send and/or receive on the one queue, read the one or two secrets it needs, read and write
 * the claim-check container. User-assigned
 * (not system-assigned) so the roles exist before the app starts and resolves its Key Vault
 * references.
 */
import { Construct } from "constructs";
import { RoleAssignment } from "@cdktf/provider-azurerm/lib/role-assignment/index.js";
import { UserAssignedIdentity } from "@cdktf/provider-azurerm/lib/user-assigned-identity/index.js";
import type { FunctionName } from "../artifacts.js";
import type { AzureScope } from "./privateNetwork.js";

export interface Grant {
  role: "Azure Service Bus Data Sender" | "Azure Service Bus Data Receiver" | "Key Vault Secrets User" | "Storage Blob Data Contributor";
  scope: string;
}

export class ManagedIdentities extends Construct {
  readonly identities: Record<FunctionName, UserAssignedIdentity>;

  constructor(scope: Construct, id: string, props: AzureScope & { grants: Record<FunctionName, Grant[]> }) {
    super(scope, id);
    const make = (fn: FunctionName) => {
      const identity = new UserAssignedIdentity(this, `${fn}-identity`, {
        name: `${props.prefix}-${fn}`,
        resourceGroupName: props.resourceGroupName,
        location: props.location,
      });
      props.grants[fn].forEach(
        (grant, i) => new RoleAssignment(this, `${fn}-grant${i}`, { scope: grant.scope, roleDefinitionName: grant.role, principalId: identity.principalId }),
      );
      return identity;
    };
    this.identities = { ingest: make("ingest"), processor: make("processor"), relay: make("relay") };
  }
}
