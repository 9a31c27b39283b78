/**
 * Claim-check objects in Azure Blob Storage (`azblob://container/key`), through the official
 * `@azure/storage-blob` client: one block blob per payload (Put Blob), read back whole (Get Blob).
 * The functions load this module only for a payload over the queue's limit or a claim-check
 * reference (functions/azure/connections.ts), so the SDK is a chunk loaded on that first use.
 *
 * Authentication, as the SDK does it: a connection string (an account key, signed with Shared Key;
 * or a SAS; with both, the key is used), or the account's Blob endpoint with a `TokenCredential`
 * (the Function App's managed identity, which needs "Storage Blob Data Contributor" on the container).
 *
 * Integrity end to end: the writer stores the MD5 of the bytes it has as the blob's Content-MD5,
 * and the reader refuses bytes that do not match it (a Put and a Get are separate processes).
 * Retries are the SDK's: a request with no answer within `timeoutMs`, a network error, or 408, 429
 * (throttling), 500, 502, 503 or 504 is tried again, up to 3 tries in all, `retryDelayMs` apart and
 * growing; Put Blob with the same bytes overwrites with the same blob, so repeating it is safe.
 */
import { createHash } from "node:crypto";
import type { TokenCredential } from "@azure/core-auth";
import { ContainerClient, RestError, type StoragePipelineOptions } from "@azure/storage-blob";
import { ClaimCheckError, parseReference, type ObjectStore } from "./port.js";

export interface AzureBlobStoreOptions {
  container: string;
  /** A storage connection string (account key or SAS; Azurite in tests), or … */
  connectionString?: string;
  /** … the account's Blob endpoint (`https://<account>.blob.core.windows.net`) with a `credential`. */
  accountUrl?: string;
  /** Gives bearer tokens for Blob Storage; required with `accountUrl`. */
  credential?: TokenCredential;
  /** Deadline of one try. Default: 30 000 ms. */
  timeoutMs?: number;
  /** The SDK's first retry delay (it grows with each retry, at most 10×). Default: 200 ms. */
  retryDelayMs?: number;
}

const TRIES = 3;

/**
 * @throws ClaimCheckError when the options cannot reach a container (the message says what to set).
 * @example
 * const store = await createAzureBlobStore({ container: "claim-checks", accountUrl: "https://acct.blob.core.windows.net", credential });
 * const reference = await store.put("inbound/shop/evt_1", bytes, "application/json"); // "azblob://claim-checks/inbound/shop/evt_1"
 */
export async function createAzureBlobStore(options: AzureBlobStoreOptions): Promise<ObjectStore> {
  if (options.connectionString && options.accountUrl) throw new ClaimCheckError("Azure Blob claim-check: set a connection string or an account URL, not both.");
  if (!options.container) throw new ClaimCheckError("Azure Blob claim-check needs a container name.");
  const retryDelayInMs = options.retryDelayMs ?? 200;
  const pipeline: StoragePipelineOptions = {
    retryOptions: { maxTries: TRIES, tryTimeoutInMs: options.timeoutMs ?? 30_000, retryDelayInMs, maxRetryDelayInMs: retryDelayInMs * 10 },
  };
  const containers = new Map<string, ContainerClient>();
  let open: (name: string) => ContainerClient;
  if (options.connectionString) {
    const connectionString = options.connectionString;
    try {
      new ContainerClient(connectionString, options.container, pipeline);
    } catch (error) {
      // The SDK's own reason (a missing AccountKey, say); never the connection string, which holds the key.
      throw new ClaimCheckError(`Azure Blob claim-check: the connection string cannot be used (${firstLine(error)}); it needs AccountName and AccountKey (or BlobEndpoint or SharedAccessSignature).`, { cause: error });
    }
    open = (name) => new ContainerClient(connectionString, name, pipeline);
  } else if (options.accountUrl) {
    if (!/^https?:\/\/[^/]+/i.test(options.accountUrl)) throw new ClaimCheckError(`Azure Blob claim-check: the account URL ${JSON.stringify(options.accountUrl)} is not an http(s) URL.`);
    if (!options.credential) throw new ClaimCheckError("Azure Blob claim-check: an account URL needs a credential (the functions pass their managed identity).");
    const root = options.accountUrl.replace(/\/+$/, "");
    const credential = options.credential;
    open = (name) => new ContainerClient(`${root}/${encodeURIComponent(name)}`, credential, pipeline);
  } else throw new ClaimCheckError("Azure Blob claim-check needs a connection string or an account URL.");
  const container = (name: string) => {
    let client = containers.get(name);
    if (!client) containers.set(name, (client = open(name)));
    return client;
  };

  return {
    name: "azure-blob",
    async put(key, bytes, contentType) {
      const what = `Put Blob ${options.container}/${key}`;
      const blob = container(options.container).getBlockBlobClient(blobName(key));
      try {
        await blob.upload(bytes, bytes.length, {
          blobHTTPHeaders: { blobContentMD5: createHash("md5").update(bytes).digest(), ...(contentType ? { blobContentType: contentType } : {}) },
        });
      } catch (error) {
        throw refused(what, blob.url, error);
      }
      return `azblob://${options.container}/${key}`;
    },
    async get(reference) {
      const { container: name, key } = parseReference(reference, "azblob");
      const what = `Get Blob ${name}/${key} (claim-check ${reference})`;
      const blob = container(name).getBlobClient(blobName(key));
      let bytes: Buffer;
      let expected: Uint8Array | undefined;
      try {
        const response = await blob.download(0, undefined, { maxRetryRequests: TRIES - 1 });
        expected = response.contentMD5;
        bytes = await readAll(response.readableStreamBody);
      } catch (error) {
        throw refused(what, blob.url, error);
      }
      if (expected && !createHash("md5").update(bytes).digest().equals(Buffer.from(expected))) {
        throw new ClaimCheckError(`${what}: the bytes read do not match the blob's Content-MD5; not used.`);
      }
      return bytes;
    },
  };
}

/**
 * The blob's name for a key: the key itself (the SDK percent-encodes each segment, a `%` included),
 * except that a segment of dots only would be resolved away in the URL path (`a/../b` is `b`), so
 * its dots are stored as the text `%2E`, as the REST client before the SDK stored them.
 */
function blobName(key: string): string {
  return key.split("/").map((segment) => (/^\.+$/.test(segment) ? segment.replaceAll(".", "%2E") : segment)).join("/");
}

async function readAll(stream: NodeJS.ReadableStream | undefined): Promise<Buffer> {
  if (!stream) throw new Error("the answer has no body");
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}

const firstLine = (error: unknown) => String((error as Error)?.message ?? error).split("\n")[0]!.trim().slice(0, 200);

/** What Blob Storage answered (status, error code, its message's first line), or that nothing answered, with what to check. */
function refused(what: string, url: string, error: unknown): ClaimCheckError {
  if (!(error instanceof RestError) || error.statusCode === undefined) {
    const origin = new URL(url).origin;
    return new ClaimCheckError(`${what} at ${origin}: no answer in ${TRIES} tries or the request could not be made (${firstLine(error)}).`, { cause: error });
  }
  const code = error.code ?? "";
  const hint = code === "ContainerNotFound" ? " Create the container (the stack does) or fix WEBHOOKS_CLAIM_CHECK_CONTAINER."
    : code === "BlobNotFound" ? " The object is gone (deleted by the lifecycle rule?)."
    : error.statusCode === 403 ? " Check the account key, or the identity's \"Storage Blob Data Contributor\" role on the container."
    : "";
  return new ClaimCheckError(`${what}: Blob Storage answered ${error.statusCode}${code ? ` ${code}` : ""} (${firstLine(error)}).${hint}`, { cause: error });
}
