/**
 * A service account per runtime role, each with only the project roles it needs (logs,
 * traces, metrics). No `roles/cloudsql.client`: the functions dial the instance's private IP
 * with a password over TLS, which that role plays no part in (it is for the Cloud SQL Auth
 * Proxy and connectors, which call the SQL Admin API). Grants on a single resource (a topic, a
 * secret, a service) are made next to that resource, by the construct that owns it.
 */
import { Construct } from "constructs";
import { ProjectIamMember } from "@cdktf/provider-google/lib/project-iam-member/index.js";
import { ServiceAccount } from "@cdktf/provider-google/lib/service-account/index.js";

export type Account = "ingest" | "processor" | "relay" | "migrate" | "management" | "build" | "push" | "scheduler" | "gateway";

const PROJECT_ROLES: Record<Account, string[]> = {
  ingest: ["roles/logging.logWriter", "roles/cloudtrace.agent", "roles/monitoring.metricWriter", "roles/telemetry.metricsWriter"],
  processor: ["roles/logging.logWriter", "roles/cloudtrace.agent", "roles/monitoring.metricWriter", "roles/telemetry.metricsWriter"],
  relay: ["roles/logging.logWriter", "roles/cloudtrace.agent", "roles/monitoring.metricWriter", "roles/telemetry.metricsWriter"],
  migrate: ["roles/logging.logWriter"],
  management: ["roles/logging.logWriter", "roles/cloudtrace.agent", "roles/monitoring.metricWriter", "roles/telemetry.metricsWriter"],
  // Cloud Build for the functions' source: write build logs and push the image.
  build: ["roles/logging.logWriter", "roles/artifactregistry.writer"],
  // Identities that only mint OIDC tokens to call one function each: no project role.
  push: [],
  scheduler: [],
  gateway: [],
};

export class ServiceAccounts extends Construct {
  readonly emails: Record<Account, string>;
  readonly ids: Record<Account, string>;

  constructor(scope: Construct, id: string, props: { prefix: string; project: string }) {
    super(scope, id);
    const emails = {} as Record<Account, string>;
    const ids = {} as Record<Account, string>;
    for (const account of Object.keys(PROJECT_ROLES) as Account[]) {
      const sa = new ServiceAccount(this, account, { accountId: `${props.prefix}-${account}`, displayName: `webhooks ${account}` });
      for (const role of PROJECT_ROLES[account]) {
        new ProjectIamMember(this, `${account}-${role.replace(/\W/g, "-")}`, { project: props.project, role, member: sa.member });
      }
      emails[account] = sa.email;
      ids[account] = sa.id;
    }
    this.emails = emails;
    this.ids = ids;
  }
}
