/**
 * Subscription secrets are stored encrypted (docs/secrets.md). A bench's databases are thrown away
 * after the run, so their secrets are sealed under a key made for the run, unless ENCRYPTION_KEYS
 * is set. Function processes a bench starts get the same value.
 */
import { randomBytes } from "node:crypto";

export function useThrowawayEncryptionKey(): string {
  process.env.ENCRYPTION_KEYS ||= `bench:${randomBytes(32).toString("base64")}`;
  return process.env.ENCRYPTION_KEYS;
}
