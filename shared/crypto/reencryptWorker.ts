/**
 * The re-encryption pass as part of the relay's periodic work: at start and every few minutes
 * locally, at each scheduled run in the cloud. Logs what it rewrote, and every row it cannot read
 * (naming the missing key id) at error level: that row's deliveries wait until the key is back.
 */
import type { Logger } from "pino";
import type { Database } from "../db/port.js";
import { runPeriodically, type PeriodicJob } from "../periodic.js";
import { keyringIfAny } from "./activeKeyring.js";
import { reencryptSecrets, type ReencryptResult } from "./reencrypt.js";

/** Between two local passes. A rotation is finished within this (plus the pass) of the new key's start. */
export const REENCRYPT_INTERVAL_MS = 5 * 60_000;

/** One pass, logged; never throws (the relay's work goes on). Null when this process has no keys. */
export async function reencryptPass(db: Database, logger: Logger | undefined, shouldStop?: () => boolean): Promise<ReencryptResult | null> {
  const keyring = keyringIfAny();
  if (!keyring) return null;
  try {
    const result = await reencryptSecrets(db, { keyring, ...(shouldStop ? { shouldStop } : {}) });
    if (result.rewritten > 0) logger?.info({ rewritten: result.rewritten, keyId: keyring.primary.id }, "subscription secrets re-encrypted under the first key of ENCRYPTION_KEYS");
    if (result.unreadable.length > 0) {
      logger?.error({ unreadable: result.unreadable.slice(0, 20), count: result.unreadable.length },
        "subscription secrets that cannot be decrypted with ENCRYPTION_KEYS: their deliveries wait; put the named key back (docs/secrets.md)");
    }
    return result;
  } catch (error) {
    logger?.warn({ err: error }, "the re-encryption pass failed; it runs again later");
    return null;
  }
}

/** The local platform's periodic pass (first run at once). */
export function startReencryption(db: Database, logger: Logger | undefined, intervalMs = REENCRYPT_INTERVAL_MS): PeriodicJob {
  return runPeriodically("secrets-reencryption", async (shouldStop) => { await reencryptPass(db, logger, shouldStop); }, {
    intervalMs,
    onError: (error) => logger?.warn({ err: error }, "the re-encryption pass failed; it runs again later"),
  });
}
