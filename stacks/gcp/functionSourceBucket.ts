/**
 * The private bucket holding the functions' source zips, readable by the build account only.
 */
import { Construct } from "constructs";
import { StorageBucket } from "@cdktf/provider-google/lib/storage-bucket/index.js";
import { StorageBucketIamMember } from "@cdktf/provider-google/lib/storage-bucket-iam-member/index.js";

export class FunctionSourceBucket extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: { prefix: string; project: string; region: string; buildServiceAccountEmail: string }) {
    super(scope, id);
    const bucket = new StorageBucket(this, "bucket", {
      // Bucket names are global: the project id makes this one ours.
      name: `${props.project}-${props.prefix}-sources`,
      location: props.region,
      uniformBucketLevelAccess: true,
      publicAccessPrevention: "enforced",
      versioning: { enabled: true },
      lifecycleRule: [{ condition: { numNewerVersions: 3 }, action: { type: "Delete" } }],
    });
    new StorageBucketIamMember(this, "build-reads", {
      bucket: bucket.name,
      role: "roles/storage.objectViewer",
      member: `serviceAccount:${props.buildServiceAccountEmail}`,
    });
    this.name = bucket.name;
  }
}
