/**
 * The encryption keys of a cloud function (docs/secrets.md): the text of its secret (AWS Secrets
 * Manager via WEBHOOKS_ENCRYPTION_KEYS_SECRET_ARN; Azure's ENCRYPTION_KEYS Key Vault reference;
 * GCP's ENCRYPTION_KEYS from Secret Manager), installed as the process keyring. Each runtime calls
 * it before handing out its database, so every function that reads or writes a subscription has
 * the keys; the secret is read again through the runtime's cache (five minutes on AWS), and a
 * rotated value is picked up without a redeploy. Without any, nothing is installed: the ingest
 * function needs none, and a function that does fails with EncryptionKeysMissingError naming
 * ENCRYPTION_KEYS at its first secret.
 */
import { useKeyring } from "../crypto/activeKeyring.js";
import { parseEncryptionKeys, type Keyring } from "../crypto/keyring.js";

let installed: { text: string; keyring: Keyring } | undefined;

/** Parses and installs `text` (re-parsed only when it changed); `source` names the setting or secret in errors. */
export function installEncryptionKeys(text: string | undefined, source: string): Keyring | undefined {
  const value = text?.trim();
  if (!value) return installed?.keyring;
  if (installed?.text !== value) installed = { text: value, keyring: parseEncryptionKeys(value, source) };
  useKeyring(installed.keyring);
  return installed.keyring;
}
