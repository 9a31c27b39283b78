/**
 * The Google APIs the stack uses, enabled in the project, and each resource made to wait for
 * the APIs it needs: on a fresh project, creating a topic before `pubsub.googleapis.com` is on
 * fails. Dependencies are added by resource type after the stack is built, so no construct has
 * to remember them.
 */
import { dependable, TerraformResource } from "cdktf";
import { Construct, type IConstruct } from "constructs";
import { ProjectService } from "@cdktf/provider-google/lib/project-service/index.js";

/**
 * Resource type prefix → APIs it needs; the longest matching prefix wins. IAM: service accounts
 * and their grants are `iam`; Pub/Sub and Cloud Scheduler mint OIDC tokens for a service account
 * through `iamcredentials`; project-level grants go through Resource Manager.
 */
export const NEEDS: [prefix: string, apis: string[]][] = [
  ["google_api_gateway", ["apigateway", "servicemanagement", "servicecontrol"]],
  ["google_cloudfunctions2", ["cloudfunctions", "run", "cloudbuild", "artifactregistry"]],
  ["google_cloud_run", ["run"]],
  ["google_cloud_scheduler", ["cloudscheduler", "iamcredentials"]],
  ["google_compute", ["compute"]],
  ["google_logging", ["logging"]],
  // The Telemetry API (telemetry.googleapis.com) takes the functions' OTLP spans and metrics; it
  // rides with the monitoring resources, which exist whenever telemetry is on.
  ["google_monitoring", ["monitoring", "telemetry"]],
  ["google_project_iam", ["cloudresourcemanager", "iam"]],
  ["google_pubsub", ["pubsub"]],
  ["google_secret_manager", ["secretmanager"]],
  ["google_service_account", ["iam"]],
  ["google_service_account_iam", ["iam", "iamcredentials"]],
  ["google_service_networking", ["servicenetworking"]],
  ["google_sql", ["sqladmin"]],
  ["google_storage", ["storage"]],
  ["google_vpc_access", ["vpcaccess"]],
];

/**
 * Types that wait for no API. `google_project_service` is the enabling itself; it calls Service
 * Usage, which (like Resource Manager for reading the project) must be on before Terraform can
 * enable anything: docs/deploy-gcp.md enables both first.
 */
export const NEEDS_NONE: readonly string[] = ["google_project_service"];

/** The APIs a resource type waits for; undefined when the type is in neither list (a test fails on it). */
export function apisFor(type: string): string[] | undefined {
  if (NEEDS_NONE.includes(type)) return [];
  const matches = NEEDS.filter(([prefix]) => type.startsWith(prefix)).sort((a, b) => b[0].length - a[0].length);
  return matches[0]?.[1];
}

export class ProjectApis extends Construct {
  private readonly services = new Map<string, ProjectService>();

  constructor(scope: Construct, id: string, props: { project: string }) {
    super(scope, id);
    for (const api of new Set(NEEDS.flatMap(([, apis]) => apis))) {
      this.services.set(api, new ProjectService(this, api, { project: props.project, service: `${api}.googleapis.com`, disableOnDestroy: false }));
    }
  }

  /** Makes every resource under `root` depend on the services its type needs. */
  requiredBy(root: IConstruct): void {
    for (const node of root.node.findAll()) {
      if (!TerraformResource.isTerraformResource(node) || node instanceof ProjectService) continue;
      const apis = apisFor(node.terraformResourceType) ?? [];
      if (apis.length === 0) continue;
      const extra = apis.map((api) => dependable(this.services.get(api)!));
      node.dependsOn = [...(node.dependsOn ?? []), ...extra.filter((d) => !(node.dependsOn ?? []).includes(d))];
    }
  }
}
