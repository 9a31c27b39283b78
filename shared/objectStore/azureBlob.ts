import { ClaimCheckError, parseReference, type ObjectStore } from "./port.js";

export interface AzureBlobStoreOptions {
  container: string;
  /** A connection string (Azurite in tests), or … */
  connectionString?: string;
  /** … the account URL, authenticated with the Function App's managed identity. */
  accountUrl?: string;
}

/** Claim-check objects in Azure Blob Storage (`azblob://container/key`). */
export async function createAzureBlobStore(options: AzureBlobStoreOptions): Promise<ObjectStore> {
  const sdk = await import("@azure/storage-blob");
  let service;
  if (options.connectionString) service = sdk.BlobServiceClient.fromConnectionString(options.connectionString);
  else if (options.accountUrl) {
    const { DefaultAzureCredential } = await import("@azure/identity");
    service = new sdk.BlobServiceClient(options.accountUrl, new DefaultAzureCredential());
  } else throw new ClaimCheckError("Azure Blob claim-check needs a connectionString or an accountUrl.");
  const container = service.getContainerClient(options.container);
  return {
    name: "azure-blob",
    async put(key, bytes, contentType) {
      await container.getBlockBlobClient(key).uploadData(bytes, { blobHTTPHeaders: { blobContentType: contentType } });
      return `azblob://${options.container}/${key}`;
    },
    async get(reference) {
      const { container: name, key } = parseReference(reference, "azblob");
      try {
        return await service.getContainerClient(name).getBlockBlobClient(key).downloadToBuffer();
      } catch (error) {
        throw new ClaimCheckError(`Could not read claim-check ${reference}: ${(error as Error).message}`, { cause: error });
      }
    },
  };
}
