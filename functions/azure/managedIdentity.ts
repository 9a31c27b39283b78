/**
 * The one export of `@azure/identity` the Azure functions use, re-exported from a module of its
 * own so connections.ts can load it lazily (`await import("./managedIdentity.js")`) and the bundle
 * keeps only `ManagedIdentityCredential` and what it needs (MSAL's managed-identity client), not
 * the package's every credential, as a dynamic import of the package itself would.
 */
export { ManagedIdentityCredential } from "@azure/identity";
