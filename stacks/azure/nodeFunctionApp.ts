/**
 * A Linux Function App on Node 22 running one built function (zip deployed from a
 * TerraformAsset), with its user-assigned identity, Key Vault references resolved through that
 * identity, Application Insights, HTTPS only, TLS 1.2, FTP off.
 *
 * SCM (Kudu) basic authentication stays ON: azurerm 4.x deploys `zip_deploy_file` by fetching the
 * site's publishing credentials and POSTing the zip to `https://<scm>/api/zipdeploy` with HTTP
 * basic auth (internal/services/appservice/helpers/publish_app.go, `GetCredentialsAndPublish` →
 * `PublishZipDeployLocalFileKuduPush`, `req.SetBasicAuth`), after it has applied
 * `webdeploy_publish_basic_authentication_enabled` (linux_function_app_resource.go, Create:
 * `UpdateScmAllowed` before the publish). With it off, every deploy answers 401. See docs/clouds.md.
 */
import type { ITerraformDependable } from "cdktf";
import { Construct } from "constructs";
import { functionAsset } from "../functionAsset.js";
import { LinuxFunctionApp } from "@cdktf/provider-azurerm/lib/linux-function-app/index.js";
import type { UserAssignedIdentity } from "@cdktf/provider-azurerm/lib/user-assigned-identity/index.js";
import type { FunctionHost } from "./functionHost.js";
import type { AzureScope } from "./privateNetwork.js";

export interface NodeFunctionAppProps extends AzureScope {
  name: string;
  artifactDir: string;
  host: FunctionHost;
  identity: UserAssignedIdentity;
  insightsConnectionString: string;
  /** Plain values and `@Microsoft.KeyVault(...)` references only; never a secret value. */
  appSettings: Record<string, string>;
  /** The OTEL_* settings of the app's own OpenTelemetry SDK (stacks/telemetry.ts); none: off. */
  telemetry?: Record<string, string>;
  /** Route all outbound traffic through the VNet (database, NAT). Default: false. */
  vnetSubnetId?: string;
  /** Most instances this app scales out to. */
  scaleLimit?: number;
  /** Created only after these (the RBAC propagation of its identity's grants). */
  dependsOn?: ITerraformDependable[];
}

export class NodeFunctionApp extends Construct {
  readonly app: LinuxFunctionApp;

  constructor(scope: Construct, id: string, props: NodeFunctionAppProps) {
    super(scope, id);
    const code = functionAsset(this, "code", props.artifactDir);
    this.app = new LinuxFunctionApp(this, "app", {
      name: props.name,
      resourceGroupName: props.resourceGroupName,
      location: props.location,
      servicePlanId: props.host.planId,
      storageAccountName: props.host.storageAccountName,
      storageAccountAccessKey: props.host.storageAccountKey,
      zipDeployFile: code.path,
      httpsOnly: true,
      ftpPublishBasicAuthenticationEnabled: false,
      // Needed by the zip deploy above (see the header); FTP is off.
      webdeployPublishBasicAuthenticationEnabled: true,
      identity: { type: "UserAssigned", identityIds: [props.identity.id] },
      keyVaultReferenceIdentityId: props.identity.id,
      virtualNetworkSubnetId: props.vnetSubnetId,
      appSettings: { WEBSITE_RUN_FROM_PACKAGE: "1", AZURE_CLIENT_ID: props.identity.clientId, ...props.telemetry, ...props.appSettings },
      siteConfig: {
        applicationStack: { nodeVersion: "22" },
        applicationInsightsConnectionString: props.insightsConnectionString,
        minimumTlsVersion: "1.2",
        ftpsState: "Disabled",
        http2Enabled: true,
        vnetRouteAllEnabled: props.vnetSubnetId !== undefined,
        appScaleLimit: props.scaleLimit,
      },
      tags: props.tags,
      dependsOn: props.dependsOn,
    });
  }
}
