/**
 * The Azure functions' managed identity: `@azure/identity`'s `ManagedIdentityCredential`, as
 * functions/azure/connections.ts opens it, against the identity endpoint TEST PEER
 * (test/support/managedIdentityTestPeer.ts), which plays the endpoint Azure Functions exposes
 * (`IDENTITY_ENDPOINT` + `IDENTITY_HEADER`); the real one runs only inside Azure. The official
 * credential is the other side here: what it sends is what the peer must accept, so these tests
 * check the peer's reading of the protocol as much as our wiring. Tokens from the peer reaching
 * Blob Storage (Azurite over HTTPS with `--oauth basic`, which checks audience, issuer and times)
 * are exercised by test/wiring/azure.test.ts, whose function processes trust Azurite's test
 * certificate through NODE_EXTRA_CA_CERTS, as the SDK's own HTTPS agents need.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openBlobClaimChecks } from "../../functions/azure/claimChecks.js";
import { openServiceBusQueue } from "../../functions/azure/connections.js";
import { readAzureSettings } from "../../functions/azure/runtime.js";
import { ClaimCheckError } from "../../shared/objectStore/port.js";
import { startManagedIdentityTestPeer, type ManagedIdentityTestPeer } from "../support/managedIdentityTestPeer.js";
import { failure } from "../support/failures.js";

let peer: ManagedIdentityTestPeer;
beforeAll(async () => { peer = await startManagedIdentityTestPeer(); });
afterAll(async () => { await peer?.close(); });
afterEach(() => { peer.requests.length = 0; });

/** Runs `body` with the platform's identity variables set, as in a Function App with an identity. */
async function withIdentityEnv<T>(env: Record<string, string>, body: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await body();
  } finally {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  }
}

const blobSettings = (clientId?: string) => readAzureSettings({
  WEBHOOKS_QUEUE_NAME: "q", WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL: "https://acct.blob.core.windows.net", ...(clientId ? { AZURE_CLIENT_ID: clientId } : {}),
});

describe("ManagedIdentityCredential (@azure/identity) on the identity endpoint test peer", () => {
  it("asks the endpoint for the resource with the identity header, api-version 2019-08-01 and the app's client id", async () => {
    const { ManagedIdentityCredential } = await import("../../functions/azure/managedIdentity.js");
    const token = await withIdentityEnv(peer.env, () => new ManagedIdentityCredential({ clientId: peer.userAssignedClientId }).getToken("https://storage.azure.com/.default"));
    expect(token.token.split(".")).toHaveLength(3);
    expect(token.expiresOnTimestamp).toBeGreaterThan(Date.now() + 3_000_000);
    expect(peer.requests).toEqual([{ resource: "https://storage.azure.com", clientId: peer.userAssignedClientId, apiVersion: "2019-08-01", secret: peer.env.IDENTITY_HEADER }]);
  });

  it("a client id of no identity assigned to the app is refused, with the endpoint's reason", async () => {
    const { ManagedIdentityCredential } = await import("../../functions/azure/managedIdentity.js");
    const error = await failure(withIdentityEnv(peer.env, () => new ManagedIdentityCredential({ clientId: "11111111-1111-1111-1111-111111111111" }).getToken("https://storage.azure.com/.default")));
    expect(error.name).toBe("CredentialUnavailableError");
    expect(error.message).toMatch(/Unable to load the proper Managed Identity/);
    expect(error.message).not.toContain(peer.env.IDENTITY_HEADER);
  });
});

describe("the functions' connectors with managed identity", () => {
  it("the Blob claim-check store with an account URL opens with the credential of AZURE_CLIENT_ID; a token it cannot get fails the put as a ClaimCheckError", async () => {
    await withIdentityEnv(peer.env, async () => {
      // Another app's identity: the endpoint refuses it, and the store says it found no answer it could use.
      const store = await openBlobClaimChecks(blobSettings("22222222-2222-2222-2222-222222222222"));
      const error = await failure(store!.put("inbound/shop/evt_nt", Buffer.from("{}")));
      expect(error).toBeInstanceOf(ClaimCheckError);
      expect(error.message).toMatch(/^Put Blob claim-checks\/inbound\/shop\/evt_nt at https:\/\/acct\.blob\.core\.windows\.net: .*Unable to load the proper Managed Identity/);
      expect(peer.requests[0]).toMatchObject({ resource: "https://storage.azure.com", clientId: "22222222-2222-2222-2222-222222222222" });
    });
  });

  it("without the platform's identity variables the claim-check store cannot open, and says why", async () => {
    await expect(openBlobClaimChecks(blobSettings(peer.userAssignedClientId))).rejects.toThrow(/Managed identity: IDENTITY_ENDPOINT and IDENTITY_HEADER are not set/);
  });

  const sbSettings = () => readAzureSettings({ WEBHOOKS_QUEUE_NAME: "inbound", ServiceBusConnection__fullyQualifiedNamespace: "webhooks-ns.servicebus.windows.net", ServiceBusConnection__clientId: peer.userAssignedClientId });

  it("the Service Bus queue opens with the credential when the platform's identity variables are set", async () => {
    const queue = await withIdentityEnv(peer.env, () => openServiceBusQueue(sbSettings())); // connects on first use, not here
    expect(queue.name).toBe("servicebus");
    await queue.close();
  });

  it("without them, the Service Bus queue does not open, naming IDENTITY_ENDPOINT and IDENTITY_HEADER", async () => {
    await expect(openServiceBusQueue(sbSettings())).rejects.toThrow(/Managed identity: IDENTITY_ENDPOINT and IDENTITY_HEADER are not set/);
  });
});
