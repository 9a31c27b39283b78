/**
 * One user-assigned identity per function, and the role assignments that are all it may do:
 * send and/or receive on the one queue, read the secrets it needs, write (ingest) or read
 * (processor) the claim-check container. The management app reads only the database URL, its admin
 * token and the encryption keys. User-assigned (not system-assigned) so the roles exist
 * before the app starts and resolves its Key Vault references; `propagated` is what an app must
 * wait for (RBAC takes minutes to apply, and Key Vault references are resolved at start).
 */
import { Construct } from "constructs";
import { RoleAssignment } from "@cdktf/provider-azurerm/lib/role-assignment/index.js";
import { UserAssignedIdentity } from "@cdktf/provider-azurerm/lib/user-assigned-identity/index.js";
import type { FunctionName } from "../artifacts.js";
import type { AzureScope } from "./privateNetwork.js";
import { RbacPropagation } from "./rbacPropagation.js";

export interface Grant {
  role: "Azure Service Bus Data Sender" | "Azure Service Bus Data Receiver" | "Key Vault Secrets User" | "Storage Blob Data Contributor" | "Storage Blob Data Reader";
  scope: string;
}

export class ManagedIdentities extends Construct {
  readonly identities: Record<FunctionName, UserAssignedIdentity>;
  /** Depend on this to start after every grant has had time to propagate. */
  readonly propagated: RbacPropagation["done"];

  constructor(scope: Construct, id: string, props: AzureScope & { grants: Record<FunctionName, Grant[]> }) {
    super(scope, id);
    const assignments: RoleAssignment[] = [];
    const make = (fn: FunctionName) => {
      const identity = new UserAssignedIdentity(this, `${fn}-identity`, {
        name: `${props.prefix}-${fn}`,
        resourceGroupName: props.resourceGroupName,
        location: props.location,
        tags: props.tags,
      });
      props.grants[fn].forEach((grant, i) =>
        assignments.push(new RoleAssignment(this, `${fn}-grant${i}`, { scope: grant.scope, roleDefinitionName: grant.role, principalId: identity.principalId })));
      return identity;
    };
    this.identities = { ingest: make("ingest"), processor: make("processor"), relay: make("relay"), migrate: make("migrate"), management: make("management") };
    this.propagated = new RbacPropagation(this, "propagation", assignments).done;
  }
}
