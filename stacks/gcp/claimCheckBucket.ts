/**
 * Claim-check storage for bodies larger than a Pub/Sub message: private, uniform access,
 * objects deleted once no message can still point at them.
 */
import { Construct } from "constructs";
import { StorageBucket } from "@cdktf/provider-google/lib/storage-bucket/index.js";
import { StorageBucketIamMember } from "@cdktf/provider-google/lib/storage-bucket-iam-member/index.js";
import type { StackConfig } from "../config.js";

export class ClaimCheckBucket extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: { prefix: string; project: string; region: string; config: StackConfig }) {
    super(scope, id);
    const bucket = new StorageBucket(this, "bucket", {
      name: `${props.project}-${props.prefix}-claim-checks`,
      location: props.region,
      uniformBucketLevelAccess: true,
      publicAccessPrevention: "enforced",
      lifecycleRule: [{ condition: { age: props.config.queueRetentionDays + props.config.deadLetterRetentionDays }, action: { type: "Delete" } }],
    });
    this.name = bucket.name;
  }

  /** `roles/storage.objectCreator` or `objectViewer` on this bucket for one account. */
  allow(who: string, role: "roles/storage.objectCreator" | "roles/storage.objectViewer", serviceAccountEmail: string): void {
    new StorageBucketIamMember(this, `${who}-${role.split(".")[1]}`, { bucket: this.name, role, member: `serviceAccount:${serviceAccountEmail}` });
  }
}
