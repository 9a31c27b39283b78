/**
 * Claim-check objects in Azure Blob Storage (`azblob://container/key`), over the Blob REST API
 * (through `node:http`, see shared/cloud/httpRequest.ts): Put Blob (one block blob, `Content-MD5` checked by the service) and Get Blob (the
 * returned `Content-MD5` checked here). Two calls do not need `@azure/storage-blob` (~450 KiB
 * minified with its XML parser and pipeline), so the function bundles carry none of it.
 *
 * Authentication: Shared Key when a connection string with an account key is given (Azurite in
 * tests, or an account key in a Key Vault reference; a SharedAccessSignature beside the key is
 * ignored), a SAS when the connection string carries one and no key, else a bearer token from
 * `credential` for `https://storage.azure.com` (the Function App's managed identity, which needs
 * "Storage Blob Data Contributor" on the container).
 *
 * A request that gets no answer, or 408, 429, 500, 502, 503 or 504, is sent again up to twice
 * (after `retryDelayMs`, then twice that), as the Azure SDK did: Put Blob with the same bytes and
 * Content-MD5 overwrites with the same blob, and Get Blob reads, so repeating either is safe.
 */
import { createHash } from "node:crypto";
import type { TokenCredential } from "@azure/core-auth";
import { httpRequest, HttpRequestError, type HttpResponse } from "../cloud/httpRequest.js";
import { parseStorageConnectionString, sharedKeyAuthorization, type StorageAccount } from "./azureSharedKey.js";
import { ClaimCheckError, parseReference, type ObjectStore } from "./port.js";

/** The Blob service REST version we speak (bearer tokens need 2017-11-09 or later). */
export const BLOB_API_VERSION = "2023-11-03";
const STORAGE_SCOPE = "https://storage.azure.com/.default";

export interface AzureBlobStoreOptions {
  container: string;
  /** A storage connection string (Shared Key or SAS; Azurite in tests), or … */
  connectionString?: string;
  /** … the account's Blob endpoint (`https://<account>.blob.core.windows.net`) with a `credential`. */
  accountUrl?: string;
  /** Gives bearer tokens for Blob Storage; required with `accountUrl`. */
  credential?: TokenCredential;
  /** Deadline of one request (each try). Default: 30 000 ms. */
  timeoutMs?: number;
  /** Pause before retry n (1, 2) is n × this. Default: 200 ms. */
  retryDelayMs?: number;
}

/** Statuses worth another try: the service was busy, timed out, or failed on its side. */
const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);
const TRIES = 3;

interface BlobCall {
  method: "PUT" | "GET";
  container: string;
  key: string;
  body?: Buffer;
  /** Headers of this operation (blob type, Content-MD5, content type). */
  extra?: Record<string, string>;
}

/**
 * @throws ClaimCheckError when the options cannot reach a container (the message says what to set).
 * @example
 * const store = await createAzureBlobStore({ container: "claim-checks", accountUrl: "https://acct.blob.core.windows.net", credential });
 * const reference = await store.put("inbound/shop/evt_1", bytes, "application/json"); // "azblob://claim-checks/inbound/shop/evt_1"
 */
export async function createAzureBlobStore(options: AzureBlobStoreOptions): Promise<ObjectStore> {
  if (options.connectionString && options.accountUrl) throw new ClaimCheckError("Azure Blob claim-check: set a connection string or an account URL, not both.");
  let account: StorageAccount;
  if (options.connectionString) account = parseStorageConnectionString(options.connectionString);
  else if (options.accountUrl) {
    if (!/^https?:\/\/[^/]+/i.test(options.accountUrl)) throw new ClaimCheckError(`Azure Blob claim-check: the account URL ${JSON.stringify(options.accountUrl)} is not an http(s) URL.`);
    if (!options.credential) throw new ClaimCheckError("Azure Blob claim-check: an account URL needs a credential (the functions pass their managed identity).");
    account = { blobEndpoint: options.accountUrl.replace(/\/+$/, "") };
  } else throw new ClaimCheckError("Azure Blob claim-check needs a connection string or an account URL.");
  if (!options.container) throw new ClaimCheckError("Azure Blob claim-check needs a container name.");
  const timeoutMs = options.timeoutMs ?? 30_000;
  const pause = options.retryDelayMs ?? 200;

  /** One try: a fresh date, signature or token each time. */
  async function send(what: string, { method, container, key, body, extra }: BlobCall): Promise<HttpResponse> {
    const url = new URL(`${account.blobEndpoint}/${container}/${blobPath(key)}${account.sas ? `?${account.sas}` : ""}`);
    const headers: Record<string, string> = { "x-ms-date": new Date().toUTCString(), "x-ms-version": BLOB_API_VERSION, ...extra };
    if (body) headers["content-length"] = String(body.length);
    if (account.accountKey && account.accountName) {
      headers.authorization = sharedKeyAuthorization(account.accountName, account.accountKey, method, url, headers);
    } else if (!account.sas) {
      headers.authorization = `Bearer ${await bearerToken(what)}`;
    }
    return httpRequest(url.href, { method, headers, body, timeoutMs });
  }

  async function bearerToken(what: string): Promise<string> {
    let token;
    try {
      token = await options.credential!.getToken(STORAGE_SCOPE);
    } catch (error) {
      throw new ClaimCheckError(`${what} at ${account.blobEndpoint}: no token for Blob Storage (${(error as Error).message}).`, { cause: error });
    }
    if (!token) throw new ClaimCheckError(`${what}: the credential gave no token for Blob Storage.`);
    return token.token;
  }

  /** `send`, tried again on no answer or a retryable status; the last answer or failure stands. */
  async function sendWithRetries(what: string, call: BlobCall): Promise<HttpResponse> {
    for (let attempt = 1; ; attempt++) {
      let response: HttpResponse | undefined;
      try {
        response = await send(what, call);
      } catch (error) {
        if (!(error instanceof HttpRequestError) || attempt === TRIES) throw unreachable(what, account, error, attempt);
      }
      if (response && (!RETRYABLE_STATUS.has(response.status) || attempt === TRIES)) return response;
      await new Promise((resolve) => setTimeout(resolve, attempt * pause));
    }
  }

  return {
    name: "azure-blob",
    async put(key, bytes, contentType) {
      const md5 = createHash("md5").update(bytes).digest("base64");
      const what = `Put Blob ${options.container}/${key}`;
      const response = await sendWithRetries(what, {
        method: "PUT", container: options.container, key, body: bytes,
        extra: { "x-ms-blob-type": "BlockBlob", "content-md5": md5, ...(contentType ? { "content-type": contentType } : {}) },
      });
      if (response.status !== 201) throw refused(what, response);
      return `azblob://${options.container}/${key}`;
    },
    async get(reference) {
      const { container, key } = parseReference(reference, "azblob");
      const what = `Get Blob ${container}/${key} (claim-check ${reference})`;
      const response = await sendWithRetries(what, { method: "GET", container, key });
      if (response.status !== 200) throw refused(what, response);
      const bytes = response.body;
      const expected = response.headers["content-md5"];
      if (expected && createHash("md5").update(bytes).digest("base64") !== expected) {
        throw new ClaimCheckError(`${what}: the bytes read do not match the blob's Content-MD5; not used.`);
      }
      return bytes;
    },
  };
}

/**
 * The key as a URL path: each segment percent-encoded, so the blob's name is the key exactly (a
 * `%` included, as the SDK stored it). A segment of dots only would be resolved away by URL
 * parsing (`a/../b` is `b`), so its dots are stored as the literal text `%2E`.
 */
function blobPath(key: string): string {
  return key.split("/").map((segment) => encodeURIComponent(/^\.+$/.test(segment) ? segment.replaceAll(".", "%2E") : segment)).join("/");
}

/** No answer from Blob Storage (after `tries` tries), or a request that could not be made. */
function unreachable(what: string, account: StorageAccount, error: unknown, tries: number): ClaimCheckError {
  if (error instanceof ClaimCheckError) return error;
  const why = error instanceof HttpRequestError ? `no answer${tries > 1 ? ` in ${tries} tries` : ""}` : "the request could not be made";
  return new ClaimCheckError(`${what} at ${account.blobEndpoint}: ${why} (${(error as Error).message}).`, { cause: error });
}

/** The service's error code and message (`x-ms-error-code`, `<Message>` of the XML body). */
function refused(what: string, response: HttpResponse): ClaimCheckError {
  const text = response.body.toString("utf8");
  const header = response.headers["x-ms-error-code"];
  const code = (typeof header === "string" ? header : undefined) ?? /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? "";
  const message = (/<Message>([^<\n]*)/.exec(text)?.[1] ?? "").trim().slice(0, 200);
  const hint = code === "ContainerNotFound" ? " Create the container (the stack does) or fix WEBHOOKS_CLAIM_CHECK_CONTAINER."
    : code === "BlobNotFound" ? " The object is gone (deleted by the lifecycle rule?)."
    : response.status === 403 ? " Check the account key, or the identity's \"Storage Blob Data Contributor\" role on the container."
    : "";
  return new ClaimCheckError(`${what}: Blob Storage answered ${response.status}${code ? ` ${code}` : ""}${message ? ` (${message})` : ""}.${hint}`);
}
