/**
 * The Google APIs the stack uses, enabled in the project, and each resource made to wait for
 * the APIs it needs: on a fresh project, creating a topic before `pubsub.googleapis.com` is on
 * fails. Dependencies are added by resource type after the stack is built, so no construct has
 * to remember them.
 */
import { dependable, TerraformResource } from "cdktf";
import { Construct, type IConstruct } from "constructs";
import { ProjectService } from "@cdktf/provider-google/lib/project-service/index.js";

/** Resource type prefix → APIs it needs. */
const NEEDS: [prefix: string, apis: string[]][] = [
  ["google_api_gateway", ["apigateway", "servicemanagement", "servicecontrol"]],
  ["google_cloudfunctions2", ["cloudfunctions", "run", "cloudbuild", "artifactregistry"]],
  ["google_cloud_run", ["run"]],
  ["google_cloud_scheduler", ["cloudscheduler"]],
  ["google_compute", ["compute"]],
  ["google_monitoring", ["monitoring"]],
  ["google_pubsub", ["pubsub"]],
  ["google_secret_manager", ["secretmanager"]],
  ["google_service_networking", ["servicenetworking"]],
  ["google_sql", ["sqladmin"]],
  ["google_vpc_access", ["vpcaccess"]],
];

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
      const apis = NEEDS.find(([prefix]) => node.terraformResourceType.startsWith(prefix))?.[1] ?? [];
      if (apis.length === 0) continue;
      const extra = apis.map((api) => dependable(this.services.get(api)!));
      node.dependsOn = [...(node.dependsOn ?? []), ...extra.filter((d) => !(node.dependsOn ?? []).includes(d))];
    }
  }
}
