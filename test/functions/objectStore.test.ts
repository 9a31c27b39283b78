/**
 * One claim-check contract, three stores: S3 on moto, Blob Storage on Azurite (Microsoft's own
 * emulator, run from node_modules), Cloud Storage on an in-process test peer (no emulator for it
 * runs here; see test/support/gcsTestPeer.ts for what it models).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { BlobServiceClient } from "@azure/storage-blob";
import { ClaimCheckError, type ObjectStore } from "../../shared/objectStore/port.js";
import { createS3Store } from "../../shared/objectStore/s3.js";
import { createAzureBlobStore } from "../../shared/objectStore/azureBlob.js";
import { createGcsStore } from "../../shared/objectStore/gcs.js";
import { startGcsTestPeer } from "../support/gcsTestPeer.js";
import { MOTO_CLIENT_CONFIG, MOTO_URL, motoAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { startAzurite, type Azurite } from "../support/azurite.js";

function claimCheckContract(name: string, setup: () => Promise<{ store: ObjectStore; foreignReference: string; cleanup(): Promise<void> }>, skip?: () => string | undefined) {
  describe(`claim-check store: ${name}`, () => {
    let ctx: Awaited<ReturnType<typeof setup>> | undefined;
    beforeAll(async () => { if (!skip?.()) ctx = await setup(); }, 60_000);
    afterAll(async () => { await ctx?.cleanup(); });

    it("gives back exactly the bytes it stored, under a reference naming the store", async (t) => {
      if (!ctx) return t.skip();
      const bytes = Buffer.concat([Buffer.from('{"id":"evt_1","data":"'), Buffer.alloc(300 * 1024, 0x61), Buffer.from('"}\r\n--x\u00e9')]);
      const reference = await ctx.store.put(`inbound/p/evt 1/${Date.now()}`, bytes, "application/json");
      expect(reference).toMatch(/^(s3|azblob|gs):\/\//);
      const back = await ctx.store.get(reference);
      expect(back.equals(bytes)).toBe(true);
    });

    it("refuses a reference of another store and a missing object with ClaimCheckError", async (t) => {
      if (!ctx) return t.skip();
      await expect(ctx.store.get(ctx.foreignReference)).rejects.toBeInstanceOf(ClaimCheckError);
      const reference = await ctx.store.put("probe", Buffer.from("x"));
      const missing = reference.replace(/probe$/, "no-such-object");
      await expect(ctx.store.get(missing)).rejects.toBeInstanceOf(ClaimCheckError);
    });
  });
}

let motoSkip: string | undefined;
beforeAll(async () => { motoSkip = await skipUnlessAvailable("moto_server", MOTO_URL, motoAvailable); });

claimCheckContract("S3 on moto", async () => {
  const bucket = `claims-${Date.now()}`;
  await new S3Client({ ...MOTO_CLIENT_CONFIG, forcePathStyle: true }).send(new CreateBucketCommand({ Bucket: bucket }));
  const store = await createS3Store({ bucket, endpoint: MOTO_URL, region: "us-east-1", credentials: MOTO_CLIENT_CONFIG.credentials });
  return { store, foreignReference: "gs://elsewhere/key", cleanup: async () => {} };
}, () => motoSkip);

let azurite: Azurite | undefined;
claimCheckContract("Blob Storage on Azurite", async () => {
  azurite = await startAzurite();
  await BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient("claims").createIfNotExists();
  const store = await createAzureBlobStore({ container: "claims", connectionString: azurite.connectionString });
  return { store, foreignReference: "s3://elsewhere/key", cleanup: () => azurite!.stop() };
});

claimCheckContract("Cloud Storage on the test peer", async () => {
  const peer = await startGcsTestPeer();
  const store = await createGcsStore({ bucket: "claims", apiEndpoint: peer.endpoint, projectId: "test" });
  return { store, foreignReference: "azblob://elsewhere/key", cleanup: () => peer.close() };
});
