import { ClaimCheckError, parseReference, type ObjectStore } from "./port.js";

export interface GcsStoreOptions {
  bucket: string;
  /** For a local Cloud Storage endpoint in tests. */
  apiEndpoint?: string;
  projectId?: string;
}

/** Claim-check objects in Google Cloud Storage (`gs://bucket/key`). */
export async function createGcsStore(options: GcsStoreOptions): Promise<ObjectStore> {
  const { Storage } = await import("@google-cloud/storage");
  const storage = new Storage({
    projectId: options.projectId,
    ...(options.apiEndpoint ? { apiEndpoint: options.apiEndpoint, useAuthWithCustomEndpoint: false } : {}),
  });
  return {
    name: "gcs",
    async put(key, bytes, contentType) {
      await storage.bucket(options.bucket).file(key).save(bytes, { contentType, resumable: false });
      return `gs://${options.bucket}/${key}`;
    },
    async get(reference) {
      const { container, key } = parseReference(reference, "gs");
      try {
        const [bytes] = await storage.bucket(container).file(key).download();
        return bytes;
      } catch (error) {
        throw new ClaimCheckError(`Could not read claim-check ${reference}: ${(error as Error).message}`, { cause: error });
      }
    },
  };
}
