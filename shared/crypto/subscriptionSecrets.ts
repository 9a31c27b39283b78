/**
 * What of a subscription is secret at rest, and where each value is bound (the AAD): its signing
 * secrets (`outbound_subscriptions.secrets`, `whsec_…` and `whsk_…`) and the values of its custom
 * headers (`outbound_subscriptions.headers`), which often carry a receiver's API key. Header names
 * stay readable (the relay merges them with an event's own headers in SQL); their values are sealed
 * one by one, bound to their name, so a value cannot be moved to another header or row.
 */
import { activeKeyring, keyringIfAny } from "./activeKeyring.js";
import { EncryptionKeysMissingError, MissingEncryptionKeyError, type Keyring } from "./keyring.js";
import { isSealed, keyIdOf, open, seal, SecretDecryptionError } from "./envelope.js";

/** The errors that mean "this value cannot be decrypted here": a missing key, no keys at all, an altered value. */
export function isUnreadableSecretError(error: unknown): error is MissingEncryptionKeyError | EncryptionKeysMissingError | SecretDecryptionError {
  return error instanceof MissingEncryptionKeyError || error instanceof EncryptionKeysMissingError || error instanceof SecretDecryptionError;
}

export const secretsWhere = (subscriptionId: string): string => `outbound_subscriptions.secrets:${subscriptionId}`;
export const headerWhere = (subscriptionId: string, name: string): string => `outbound_subscriptions.headers.${name}:${subscriptionId}`;

/** The secrets as stored: each sealed under the primary key. */
export function sealSecrets(subscriptionId: string, secrets: readonly string[]): string[] {
  const keyring = activeKeyring();
  return secrets.map((s) => seal(keyring, s, secretsWhere(subscriptionId)));
}

/** The secrets in clear (legacy plaintext values pass through). Throws MissingEncryptionKeyError naming a missing key id. */
export function openSecrets(subscriptionId: string, stored: readonly string[]): string[] {
  return stored.map((s) => openValue(s, secretsWhere(subscriptionId)));
}

/** Header values sealed (names kept). */
export function sealHeaders(subscriptionId: string, headers: Readonly<Record<string, string>>): Record<string, string> {
  const entries = Object.entries(headers);
  if (entries.length === 0) return {};
  const keyring = activeKeyring();
  return Object.fromEntries(entries.map(([name, value]) => [name, seal(keyring, value, headerWhere(subscriptionId, name))]));
}

/** Header values in clear; values that are not envelopes (an event's own headers, legacy rows) pass through. */
export function openHeaders(subscriptionId: string, headers: Readonly<Record<string, string>> | null | undefined): Record<string, string> {
  if (!headers) return {};
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, openValue(value, headerWhere(subscriptionId, name))]));
}

/**
 * Values decrypted recently, by envelope (unique: each has its own random IV), with where they were
 * opened: a relay signs with the same few secrets thousands of times a second. An envelope copied
 * into another row is a miss there (its `where` differs), so it is opened, and refused, again.
 * Bounded; emptied when the keyring changes.
 */
const opened = new Map<string, { where: string; plain: string }>();
const OPENED_CACHE_SIZE = 4096;
let openedWith: Keyring | undefined;

/** One stored value in clear (a plaintext one passes through), bound to `where`; cached as above. Also opens the endpoint auth's secret parts (shared/outbound/endpointAuth). */
export function openValue(value: string, where: string): string {
  if (!isSealed(value)) return value;
  const keyring = keyringIfAny();
  if (!keyring) throw new EncryptionKeysMissingError(`this process (a value under key "${keyIdOf(value)}" must be decrypted)`);
  if (openedWith !== keyring) {
    opened.clear();
    openedWith = keyring;
  }
  const hit = opened.get(value);
  if (hit !== undefined && hit.where === where) return hit.plain;
  const plain = open(keyring, value, where);
  if (opened.size >= OPENED_CACHE_SIZE) opened.delete(opened.keys().next().value as string);
  opened.set(value, { where, plain });
  return plain;
}
