/**
 * One claim-check contract, three stores, each on its cloud's official SDK: S3 on moto, Blob
 * Storage on Azurite (Microsoft's own emulator, run from node_modules; the store's retries with
 * the SDK's retry policy as we configure it, through test/support/faultyProxyTestPeer.ts in front
 * of Azurite), Cloud Storage on an in-process test peer (no Cloud Storage emulator runs here; see
 * test/support/gcsTestPeer.ts for what it models).
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { AccountSASPermissions, BlobServiceClient, generateAccountSASQueryParameters, StorageSharedKeyCredential, type ContainerClient } from "@azure/storage-blob";
import { ClaimCheckError, type ObjectStore } from "../../shared/objectStore/port.js";
import { createS3Store } from "../../shared/objectStore/s3.js";
import { createAzureBlobStore } from "../../shared/objectStore/azureBlob.js";
import { createGcsStore } from "../../shared/objectStore/gcs.js";
import { startGcsTestPeer } from "../support/gcsTestPeer.js";
import { MOTO_CLIENT_CONFIG, MOTO_URL, motoAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { startAzurite, type Azurite } from "../support/azurite.js";
import { startFaultyProxyTestPeer, type FaultyProxyTestPeer } from "../support/faultyProxyTestPeer.js";

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

describe("Blob Storage store on Azurite: what only Azure has", () => {
  let own: Azurite | undefined;
  let container: ContainerClient | undefined;
  beforeAll(async () => {
    own = await startAzurite();
    container = BlobServiceClient.fromConnectionString(own.connectionString).getContainerClient("claims");
    await container.createIfNotExists();
  }, 60_000);
  afterAll(async () => { await own?.stop(); });
  const store = (connectionString = own!.connectionString, name = "claims") => createAzureBlobStore({ container: name, connectionString });

  it("stores each key as the blob's name (dot-only segments as %2E) and reads blobs written before", async (t) => {
    if (!container) return t.skip();
    const keys = ["inbound/shop/evt%20a b", "inbound/shop/..", "inbound/./x", "inbound/é/?#&=+"];
    for (const key of keys) await (await store()).put(key, Buffer.from(key), "application/json");
    const names: string[] = [];
    for await (const blob of container.listBlobsFlat({ prefix: "inbound/" })) names.push(blob.name);
    // Dot-only segments would be resolved away in a URL path: they are kept as the text %2E.
    expect(names.sort()).toEqual(["inbound/%2E/x", "inbound/shop/%2E%2E", "inbound/shop/evt%20a b", "inbound/é/?#&=+"].sort());
    const sdkRead = await container.getBlockBlobClient("inbound/é/?#&=+").downloadToBuffer();
    expect(sdkRead.toString()).toBe("inbound/é/?#&=+");
    expect((await container.getBlockBlobClient("inbound/é/?#&=+").getProperties()).contentType).toBe("application/json");
    // What a store wrote before (a percent-encoded event id in the key) reads back.
    const written = Buffer.from([0, 1, 2, 255, 254]);
    await container.getBlockBlobClient("inbound/shop/evt%3A1").uploadData(written);
    expect((await (await store()).get("azblob://claims/inbound/shop/evt%3A1")).equals(written)).toBe(true);
  });

  it("authenticates with a SAS from the connection string instead of a key", async (t) => {
    if (!container) return t.skip();
    const key = /AccountKey=([^;]+)/.exec(own!.connectionString)![1]!;
    const sas = generateAccountSASQueryParameters({
      expiresOn: new Date(Date.now() + 3_600_000), permissions: AccountSASPermissions.parse("rwc"),
      services: "b", resourceTypes: "o",
    }, new StorageSharedKeyCredential("devstoreaccount1", key)).toString();
    const endpoint = /BlobEndpoint=([^;]+)/.exec(own!.connectionString)![1]!;
    const viaSas = await store(`BlobEndpoint=${endpoint};SharedAccessSignature=${sas}`);
    const reference = await viaSas.put("sas/evt", Buffer.from("signed by SAS"));
    expect((await container.getBlockBlobClient("sas/evt").downloadToBuffer()).toString()).toBe("signed by SAS");
    expect((await viaSas.get(reference)).toString()).toBe("signed by SAS");
  });

  it("with both an account key and a SAS, signs with the key and sends no SAS", async (t) => {
    if (!container) return t.skip();
    const proxy = await startFaultyProxyTestPeer(own!.blobEndpoint);
    try {
      const both = `${own!.connectionString.replace(/BlobEndpoint=[^;]+/, `BlobEndpoint=${proxy.url}`)};SharedAccessSignature=sv=2022-11-02&sig=not-a-signature`;
      const viaKey = await store(both);
      const reference = await viaKey.put("both/evt", Buffer.from("signed by the key"));
      expect((await viaKey.get(reference)).toString()).toBe("signed by the key");
      // No SAS on the URL: only the SDK's server timeout (the try's deadline, in seconds).
      expect(proxy.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["PUT /devstoreaccount1/claims/both/evt?timeout=30", "GET /devstoreaccount1/claims/both/evt?timeout=30"]);
    } finally {
      await proxy.close();
    }
  });

  it("a Get whose bytes do not match the blob's Content-MD5 is refused", async (t) => {
    if (!container) return t.skip();
    const reference = await (await store()).put("md5/evt", Buffer.from("the real bytes"));
    // The blob's stored MD5 property set to another content's (Set Blob Properties does not check it).
    const other = createHash("md5").update("other bytes").digest();
    await container.getBlockBlobClient("md5/evt").setHTTPHeaders({ blobContentMD5: other, blobContentType: "application/json" });
    await expect((await store()).get(reference)).rejects.toThrow(/^Get Blob claims\/md5\/evt \(claim-check azblob:\/\/claims\/md5\/evt\): the bytes read do not match the blob's Content-MD5; not used\.$/);
    // What the store writes carries the MD5 of its bytes, so a reader can check it.
    const written = await (await store()).put("md5/good", Buffer.from("checked bytes"));
    expect(Buffer.from((await container.getBlockBlobClient("md5/good").getProperties()).contentMD5!).toString("base64")).toBe(createHash("md5").update("checked bytes").digest("base64"));
    expect((await (await store()).get(written)).toString()).toBe("checked bytes");
  });

  describe("through the faulty proxy test peer", () => {
    let proxy: FaultyProxyTestPeer | undefined;
    beforeAll(async () => { if (own) proxy = await startFaultyProxyTestPeer(own.blobEndpoint); });
    afterAll(async () => { await proxy?.close(); });
    const viaProxy = () => createAzureBlobStore({ container: "claims", connectionString: own!.connectionString.replace(/BlobEndpoint=[^;]+/, `BlobEndpoint=${proxy!.url}`), retryDelayMs: 1 });
    const BUSY = { status: 503, body: "<?xml version=\"1.0\"?><Error><Code>ServerBusy</Code><Message>Busy.</Message></Error>" };

    it("a transient 503 or a dropped connection is tried again, and the put and the get succeed", async (t) => {
      if (!container) return t.skip();
      proxy!.requests.length = 0;
      const blob = await viaProxy();
      proxy!.failNext(1, BUSY);
      const reference = await blob.put("retry/evt", Buffer.from("after one 503"));
      expect((await container.getBlockBlobClient("retry/evt").downloadToBuffer()).toString()).toBe("after one 503");
      proxy!.failNext(1, "drop");
      expect((await blob.get(reference)).toString()).toBe("after one 503");
      expect(proxy!.requests.map((r) => r.method)).toEqual(["PUT", "PUT", "GET", "GET"]);
    });

    it("gives up after three tries, saying what came back", async (t) => {
      if (!container) return t.skip();
      proxy!.requests.length = 0;
      const blob = await viaProxy();
      proxy!.failNext(3, BUSY);
      await expect(blob.put("retry/busy", Buffer.from("x"))).rejects.toThrow(/^Put Blob claims\/retry\/busy: Blob Storage answered 503 ServerBusy \(Busy\.\)\.$/);
      proxy!.failNext(3, "drop");
      await expect(blob.get("azblob://claims/retry/evt")).rejects.toThrow(/^Get Blob claims\/retry\/evt \(claim-check azblob:\/\/claims\/retry\/evt\) at http:\/\/127\.0\.0\.1:\d+: no answer in 3 tries or the request could not be made \(.*socket hang up.*\)\.$/);
      expect(proxy!.requests).toHaveLength(6);
    });

    it("an answer that is no transient failure is not tried again", async (t) => {
      if (!container) return t.skip();
      proxy!.requests.length = 0;
      const blob = await viaProxy();
      await expect(blob.get("azblob://claims/retry/no-such-blob")).rejects.toThrow(/answered 404 BlobNotFound/);
      proxy!.failNext(1, { status: 403, body: "<Error><Code>AuthorizationFailure</Code></Error>" });
      await expect(blob.put("retry/refused", Buffer.from("x"))).rejects.toThrow(/answered 403 AuthorizationFailure/);
      expect(proxy!.requests.map((r) => r.method)).toEqual(["GET", "PUT"]);
    });
  });

  it("a wrong account key is refused by the service, and the error says to check the key", async (t) => {
    if (!container) return t.skip();
    const wrongKey = own!.connectionString.replace(/AccountKey=[^;]+/, `AccountKey=${Buffer.alloc(64, 7).toString("base64")}`);
    const error = await (await store(wrongKey)).put("probe", Buffer.from("x")).then(() => undefined, (e: unknown) => e as Error);
    expect(error).toBeInstanceOf(ClaimCheckError);
    expect(error?.message).toMatch(/^Put Blob claims\/probe: Blob Storage answered 403 .*Check the account key/);
  });

  it("a missing container is named with what to fix", async (t) => {
    if (!container) return t.skip();
    await expect((await store(undefined, "no-such-container")).put("k", Buffer.from("x"))).rejects.toThrow(/answered 404 ContainerNotFound .*WEBHOOKS_CLAIM_CHECK_CONTAINER/);
  });

  it("refuses options and connection strings it cannot use, saying what is missing", async () => {
    await expect(createAzureBlobStore({ container: "claims" })).rejects.toThrow(/needs a connection string or an account URL/);
    await expect(createAzureBlobStore({ container: "claims", accountUrl: "https://acct.blob.core.windows.net" })).rejects.toThrow(/needs a credential/);
    await expect(createAzureBlobStore({ container: "claims", connectionString: "AccountName=acct" })).rejects.toThrow(/connection string cannot be used .*needs AccountName and AccountKey/);
    const noName = await createAzureBlobStore({ container: "claims", connectionString: "AccountKey=abc" }).catch((e: unknown) => e as Error);
    expect(noName).toBeInstanceOf(ClaimCheckError);
    expect((noName as Error).message).not.toContain("abc");
  });
});

claimCheckContract("Cloud Storage on the test peer", async () => {
  const peer = await startGcsTestPeer();
  const store = await createGcsStore({ bucket: "claims", apiEndpoint: peer.endpoint });
  return { store, foreignReference: "azblob://elsewhere/key", cleanup: () => peer.close() };
});
