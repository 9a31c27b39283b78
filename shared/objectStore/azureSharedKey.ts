/**
 * Azure Storage account connection strings and Shared Key request signing, for the Blob REST
 * client (azureBlob.ts). Shared Key is what a connection string with an account key gives: each
 * request carries `Authorization: SharedKey <account>:<base64 HMAC-SHA256 of the string-to-sign>`,
 * keyed with the base64-decoded account key. The string-to-sign (Blob service, version 2009-09-19
 * and later):
 *
 *   VERB \n Content-Encoding \n Content-Language \n Content-Length (empty when 0) \n Content-MD5 \n
 *   Content-Type \n Date \n If-Modified-Since \n If-Match \n If-None-Match \n If-Unmodified-Since \n
 *   Range \n CanonicalizedHeaders CanonicalizedResource
 *
 * CanonicalizedHeaders: every `x-ms-*` header, name lower-cased, sorted, `name:value\n` with the
 * value's runs of whitespace folded. CanonicalizedResource: `/<account><encoded URL path>`, then
 * per query parameter, sorted by lower-cased name, `\n<name>:<decoded values, sorted, comma-joined>`.
 */
import { createHmac } from "node:crypto";
import { ClaimCheckError } from "./port.js";

/** Azurite's fixed, public development account (`UseDevelopmentStorage=true`). */
const DEV_ACCOUNT = "devstoreaccount1";
const DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

export interface StorageAccount {
  /** The Blob service endpoint, without a trailing slash (`https://acct.blob.core.windows.net`). */
  blobEndpoint: string;
  accountName?: string;
  /** The account key (base64), for Shared Key. */
  accountKey?: string;
  /** A shared access signature (query string without `?`); only when there is no account key. */
  sas?: string;
}

/**
 * Reads `DefaultEndpointsProtocol=…;AccountName=…;AccountKey=…;EndpointSuffix=…` (or with
 * `BlobEndpoint=…`, or `SharedAccessSignature=…`, or `UseDevelopmentStorage=true`). With both an
 * account key (and name) and a SharedAccessSignature, the key is used and the SAS ignored: sending
 * both would put the SAS on the URL of a Shared Key request, and the key can do all the SAS can.
 * @throws ClaimCheckError naming what is missing; never echoing the key.
 */
export function parseStorageConnectionString(connectionString: string): StorageAccount {
  const fields = new Map<string, string>();
  for (const part of connectionString.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) fields.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  if (fields.get("usedevelopmentstorage")?.toLowerCase() === "true") {
    const proxy = fields.get("developmentstorageproxyuri") ?? "http://127.0.0.1";
    return { blobEndpoint: `${proxy.replace(/\/$/, "")}:10000/${DEV_ACCOUNT}`, accountName: DEV_ACCOUNT, accountKey: DEV_KEY };
  }
  const accountName = fields.get("accountname");
  const accountKey = fields.get("accountkey");
  const sas = fields.get("sharedaccesssignature")?.replace(/^\?/, "");
  let blobEndpoint = fields.get("blobendpoint");
  if (!blobEndpoint) {
    if (!accountName) throw new ClaimCheckError("The storage connection string has neither BlobEndpoint nor AccountName; copy it whole from the storage account's access keys.");
    blobEndpoint = `${fields.get("defaultendpointsprotocol") ?? "https"}://${accountName}.blob.${fields.get("endpointsuffix") ?? "core.windows.net"}`;
  }
  if (!/^https?:\/\//i.test(blobEndpoint)) throw new ClaimCheckError(`The storage connection string's blob endpoint ${JSON.stringify(blobEndpoint)} is not an http(s) URL.`);
  if (!sas && !(accountName && accountKey)) {
    throw new ClaimCheckError("The storage connection string needs AccountName and AccountKey (Shared Key), or SharedAccessSignature.");
  }
  const sharedKey = Boolean(accountName && accountKey);
  return { blobEndpoint: blobEndpoint.replace(/\/+$/, ""), accountName, accountKey, sas: sharedKey ? undefined : sas };
}

/**
 * The `Authorization` header value for one request. `headers` are the headers that will be sent,
 * names in lower case, including `x-ms-date` and `x-ms-version`.
 */
export function sharedKeyAuthorization(accountName: string, accountKey: string, method: string, url: URL, headers: Record<string, string>): string {
  const h = (name: string) => headers[name] ?? "";
  const contentLength = h("content-length") === "0" ? "" : h("content-length");
  const canonicalHeaders = Object.keys(headers)
    .filter((name) => name.startsWith("x-ms-"))
    .sort()
    .map((name) => `${name}:${headers[name]!.replace(/\s+/g, " ").trim()}\n`)
    .join("");
  const params = new Map<string, string[]>();
  for (const [name, value] of url.searchParams) {
    const key = name.toLowerCase();
    params.set(key, [...(params.get(key) ?? []), value]);
  }
  const canonicalQuery = [...params.keys()].sort().map((name) => `\n${name}:${params.get(name)!.sort().join(",")}`).join("");
  const stringToSign = [
    method.toUpperCase(), h("content-encoding"), h("content-language"), contentLength, h("content-md5"), h("content-type"),
    h("date"), h("if-modified-since"), h("if-match"), h("if-none-match"), h("if-unmodified-since"), h("range"),
  ].join("\n") + "\n" + canonicalHeaders + `/${accountName}${url.pathname}` + canonicalQuery;
  const signature = createHmac("sha256", Buffer.from(accountKey, "base64")).update(stringToSign, "utf8").digest("base64");
  return `SharedKey ${accountName}:${signature}`;
}
