/**
 * The object-store port for claim-checks: a payload larger than the queue's message limit is
 * stored as an object, and the queue message carries only its reference. One adapter per cloud
 * (S3, Blob Storage, Cloud Storage); each is the only module that imports its SDK.
 */
export interface ObjectStore {
  readonly name: "s3" | "azure-blob" | "gcs";
  /** Stores `bytes` under `key`; resolves to the reference to put in the message. */
  put(key: string, bytes: Buffer, contentType?: string): Promise<string>;
  /** The bytes behind a reference made by `put`. */
  get(reference: string): Promise<Buffer>;
}

/** A reference that does not belong to this store, or an object that is gone. */
export class ClaimCheckError extends Error {
  override name = "ClaimCheckError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Splits `<scheme>://<container>/<key>` as our adapters write it. */
export function parseReference(reference: string, scheme: string): { container: string; key: string } {
  const prefix = `${scheme}://`;
  if (!reference.startsWith(prefix)) throw new ClaimCheckError(`Claim-check reference ${JSON.stringify(reference)} is not a ${scheme}:// reference.`);
  const rest = reference.slice(prefix.length);
  const slash = rest.indexOf("/");
  if (slash <= 0 || slash === rest.length - 1) throw new ClaimCheckError(`Claim-check reference ${JSON.stringify(reference)} has no container or key.`);
  return { container: rest.slice(0, slash), key: rest.slice(slash + 1) };
}
