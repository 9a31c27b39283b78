/**
 * Claim-check storage: a webhook body too large for an SQS message is stored here and the
 * message carries its key. Private (public access blocked, TLS-only policy), encrypted, and
 * objects expire once no message can still point at them.
 */
import { Construct } from "constructs";
import { S3Bucket } from "@cdktf/provider-aws/lib/s3-bucket/index.js";
import { S3BucketLifecycleConfiguration } from "@cdktf/provider-aws/lib/s3-bucket-lifecycle-configuration/index.js";
import { S3BucketOwnershipControls } from "@cdktf/provider-aws/lib/s3-bucket-ownership-controls/index.js";
import { S3BucketPolicy } from "@cdktf/provider-aws/lib/s3-bucket-policy/index.js";
import { S3BucketPublicAccessBlock } from "@cdktf/provider-aws/lib/s3-bucket-public-access-block/index.js";
import { S3BucketServerSideEncryptionConfigurationA as S3BucketServerSideEncryptionConfiguration } from "@cdktf/provider-aws/lib/s3-bucket-server-side-encryption-configuration/index.js";
import type { StackConfig } from "../config.js";

export class ClaimCheckBucket extends Construct {
  readonly bucket: S3Bucket;

  constructor(scope: Construct, id: string, props: { prefix: string; config: StackConfig }) {
    super(scope, id);
    // Bucket names are global: a prefix plus a suffix S3 generates.
    this.bucket = new S3Bucket(this, "bucket", { bucketPrefix: `${props.prefix}-claim-checks-`, forceDestroy: false });
    new S3BucketPublicAccessBlock(this, "no-public", {
      bucket: this.bucket.id,
      blockPublicAcls: true,
      blockPublicPolicy: true,
      ignorePublicAcls: true,
      restrictPublicBuckets: true,
    });
    new S3BucketOwnershipControls(this, "owner", { bucket: this.bucket.id, rule: { objectOwnership: "BucketOwnerEnforced" } });
    new S3BucketServerSideEncryptionConfiguration(this, "encryption", {
      bucket: this.bucket.id,
      rule: [{ applyServerSideEncryptionByDefault: { sseAlgorithm: "AES256" } }],
    });
    new S3BucketPolicy(this, "tls-only", {
      bucket: this.bucket.id,
      policy: JSON.stringify({
        Version: "2012-10-17",
        Statement: [
          {
            Sid: "DenyInsecureTransport",
            Effect: "Deny",
            Principal: "*",
            Action: "s3:*",
            Resource: [this.bucket.arn, `${this.bucket.arn}/*`],
            Condition: { Bool: { "aws:SecureTransport": "false" } },
          },
        ],
      }),
    });
    new S3BucketLifecycleConfiguration(this, "expiry", {
      bucket: this.bucket.id,
      rule: [
        {
          id: "expire-after-queue-and-dlq-retention",
          status: "Enabled",
          filter: [{ prefix: "" }],
          expiration: [{ days: props.config.queueRetentionDays + props.config.deadLetterRetentionDays }],
        },
      ],
    });
  }
}
