import type { S3Client } from "@aws-sdk/client-s3";
import { ClaimCheckError, parseReference, type ObjectStore } from "./port.js";

export interface S3StoreOptions {
  bucket: string;
  region?: string;
  /** For moto or another S3-compatible endpoint in tests. */
  endpoint?: string;
  /** Explicit credentials (tests against moto); default: the SDK's provider chain (the Lambda role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** Claim-check objects in Amazon S3 (`s3://bucket/key`). */
export async function createS3Store(options: S3StoreOptions): Promise<ObjectStore> {
  const sdk = await import("@aws-sdk/client-s3");
  const client: S3Client = new sdk.S3Client({
    region: options.region ?? process.env.AWS_REGION ?? "us-east-1",
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    // S3-compatible endpoints (moto, MinIO, LocalStack) rarely serve bucket subdomains.
    forcePathStyle: Boolean(options.endpoint ?? process.env.AWS_ENDPOINT_URL_S3 ?? process.env.AWS_ENDPOINT_URL),
    ...(options.credentials ? { credentials: options.credentials } : {}),
  });
  return {
    name: "s3",
    async put(key, bytes, contentType) {
      await client.send(new sdk.PutObjectCommand({ Bucket: options.bucket, Key: key, Body: bytes, ContentType: contentType }));
      return `s3://${options.bucket}/${key}`;
    },
    async get(reference) {
      const { container, key } = parseReference(reference, "s3");
      try {
        const out = await client.send(new sdk.GetObjectCommand({ Bucket: container, Key: key }));
        return Buffer.from(await out.Body!.transformToByteArray());
      } catch (error) {
        throw new ClaimCheckError(`Could not read claim-check ${reference}: ${(error as Error).name}`, { cause: error });
      }
    },
  };
}
