/**
 * The keyring this process encrypts and decrypts secrets with. One per process, like the database
 * pool: every path that stores or reads a subscription's secrets (API, CLI, relay, alerts,
 * forwarding, the cloud functions) must use the same keys, and threading them through every call
 * would make forgetting them possible. The platform and each cloud runtime install it at start
 * (`useKeyring`); otherwise it is read from ENCRYPTION_KEYS on first use.
 */
import { EncryptionKeysMissingError, parseEncryptionKeys, type Keyring } from "./keyring.js";

let active: Keyring | undefined;

/** Installs the keyring (or, with undefined, forgets it: the next use reads ENCRYPTION_KEYS again). */
export function useKeyring(keyring: Keyring | undefined): void {
  active = keyring;
}

/** The installed keyring, else ENCRYPTION_KEYS parsed; EncryptionKeysMissingError when neither exists. */
export function activeKeyring(): Keyring {
  if (active) return active;
  const text = process.env.ENCRYPTION_KEYS;
  if (text && text.trim() !== "") return (active = parseEncryptionKeys(text));
  throw new EncryptionKeysMissingError();
}

/** The installed keyring or ENCRYPTION_KEYS, or undefined when there is none (decryption of legacy plaintext still works). */
export function keyringIfAny(): Keyring | undefined {
  try {
    return activeKeyring();
  } catch (error) {
    if (error instanceof EncryptionKeysMissingError) return undefined;
    throw error;
  }
}
