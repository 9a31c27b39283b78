/**
 * Claim-check objects in Google Cloud Storage (`gs://bucket/key`), through the JSON API: a
 * single-request media upload and an `alt=media` download, the two calls a claim-check makes.
 * On Google Cloud they carry the service account's token from the metadata server; against
 * another endpoint (a local test peer) they go unauthenticated. No `@google-cloud/storage`: it
 * brought google-auth-library, gaxios and retry machinery to the functions for two requests.
 */
import { metadataAccessToken, type AccessTokenProvider } from "../cloud/googleAccessToken.js";
import { googleErrorText, httpRequest } from "../cloud/httpRequest.js";
import { ClaimCheckError, parseReference, type ObjectStore } from "./port.js";

export interface GcsStoreOptions {
  bucket: string;
  /** A JSON API root other than Google's (a local test peer): requests go unauthenticated. */
  apiEndpoint?: string;
  /** Bearer tokens. Default: the metadata server's (`metadataAccessToken`) on Google's endpoint, none on another. */
  accessToken?: AccessTokenProvider;
  /** Per request. Default: 30 000 ms (claim-checks are the large payloads). */
  timeoutMs?: number;
}

/** @example const store = await createGcsStore({ bucket: "acme-claim-checks" }); */
export async function createGcsStore(options: GcsStoreOptions): Promise<ObjectStore> {
  const root = (options.apiEndpoint ?? "https://storage.googleapis.com").replace(/\/+$/, "");
  const token = options.accessToken ?? (options.apiEndpoint ? undefined : metadataAccessToken());
  const timeoutMs = options.timeoutMs ?? 30_000;
  const authorization = async (): Promise<Record<string, string>> => (token ? { authorization: `Bearer ${await token()}` } : {});

  return {
    name: "gcs",
    async put(key, bytes, contentType = "application/octet-stream") {
      const reference = `gs://${options.bucket}/${key}`;
      const url = `${root}/upload/storage/v1/b/${encodeURIComponent(options.bucket)}/o?uploadType=media&name=${encodeURIComponent(key)}`;
      const response = await httpRequest(url, { method: "POST", headers: { ...(await authorization()), "content-type": contentType }, body: bytes, timeoutMs });
      if (response.status !== 200) throw new ClaimCheckError(`Could not store claim-check ${reference}: Cloud Storage answered ${response.status} (${googleErrorText(response)}).`);
      return reference;
    },
    async get(reference) {
      const { container, key } = parseReference(reference, "gs");
      const url = `${root}/storage/v1/b/${encodeURIComponent(container)}/o/${encodeURIComponent(key)}?alt=media`;
      let response;
      try {
        response = await httpRequest(url, { headers: await authorization(), timeoutMs });
      } catch (error) {
        throw new ClaimCheckError(`Could not read claim-check ${reference}: ${(error as Error).message}`, { cause: error });
      }
      if (response.status !== 200) throw new ClaimCheckError(`Could not read claim-check ${reference}: Cloud Storage answered ${response.status} (${googleErrorText(response)}).`);
      return response.body;
    },
  };
}
