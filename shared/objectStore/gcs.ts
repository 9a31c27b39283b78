/**
 * Claim-check objects in Google Cloud Storage (`gs://bucket/key`), through the official client,
 * `@google-cloud/storage`: a single-request upload (`resumable: false`: claim-checks are at most
 * tens of MB, written once) whose returned hash the SDK checks against the bytes, and a whole
 * download. The functions load this module only for a payload over the topic's limit or a
 * claim-check reference, so the SDK is a chunk loaded on that first use.
 *
 * Credentials are the SDK's own (google-auth-library's application default credentials: on Cloud
 * Run, the service account's token from the metadata server). Against another endpoint (a local
 * test peer, `apiEndpoint`) the SDK sends no token. Retries are the SDK's: the download, and the
 * upload only when it is idempotent by its rules (a precondition), so a failed upload reaches the
 * ingest, which answers 503 and the sender retries.
 */
import type { Storage } from "@google-cloud/storage";
import { ClaimCheckError, parseReference, type ObjectStore } from "./port.js";

export interface GcsStoreOptions {
  bucket: string;
  /** A JSON API root other than Google's (a local test peer): requests go unauthenticated. */
  apiEndpoint?: string;
  /** Per request. Default: 30 000 ms (claim-checks are the large payloads). */
  timeoutMs?: number;
}

/** @example const store = await createGcsStore({ bucket: "acme-claim-checks" }); */
export async function createGcsStore(options: GcsStoreOptions): Promise<ObjectStore> {
  const sdk = await import("@google-cloud/storage");
  const storage: Storage = new sdk.Storage({
    ...(options.apiEndpoint ? { apiEndpoint: options.apiEndpoint.replace(/\/+$/, "") } : {}),
    timeout: options.timeoutMs ?? 30_000,
  });

  return {
    name: "gcs",
    async put(key, bytes, contentType = "application/octet-stream") {
      const reference = `gs://${options.bucket}/${key}`;
      try {
        await storage.bucket(options.bucket).file(key).save(bytes, { resumable: false, contentType });
      } catch (error) {
        throw new ClaimCheckError(`Could not store claim-check ${reference}: ${answered(error)}.`, { cause: error });
      }
      return reference;
    },
    async get(reference) {
      const { container, key } = parseReference(reference, "gs");
      try {
        const [bytes] = await storage.bucket(container).file(key).download();
        return bytes;
      } catch (error) {
        throw new ClaimCheckError(`Could not read claim-check ${reference}: ${answered(error)}.`, { cause: error });
      }
    },
  };
}

/** "Cloud Storage answered 404 (No such object: …)", or why no answer came. */
function answered(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: string };
  const text = String(message ?? error).split("\n")[0]!.slice(0, 200);
  const hint = code === 403 || code === 401 ? "; the function's service account needs roles/storage.objectUser on the bucket" : "";
  return typeof code === "number" && code >= 100 ? `Cloud Storage answered ${code} (${text})${hint}` : `no answer from Cloud Storage (${text})`;
}
