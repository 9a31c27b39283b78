/**
 * The keyring of the local platform (`npm start`): ENCRYPTION_KEYS when set. Without it, the
 * embedded database gets a key generated once into a file beside its data directory (like the
 * admin token it prints, so `npm start` needs no set-up); a memory-only database gets a key for the
 * life of the process. On PostgreSQL (DATABASE_URL) ENCRYPTION_KEYS is required: other processes
 * (relays, the CLI, cloud functions) share that database, and a key generated on one machine
 * would leave the others unable to read what it wrote.
 */
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { keyringIfAny, useKeyring } from "./activeKeyring.js";
import { EncryptionKeysMissingError, generateKeyEntry, parseEncryptionKeys, type Keyring } from "./keyring.js";

export interface LocalKeySettings {
  ENCRYPTION_KEYS?: string;
  DATABASE_URL?: string;
  DATA_DIR?: string;
}

/** The key file of an embedded database in `dataDir`: `<dataDir>.encryption-keys` (outside PGlite's own directory). */
export function keyFilePath(dataDir: string): string {
  return `${dataDir.replace(/\/+$/, "")}.encryption-keys`;
}

/**
 * Resolves the local keyring; `warn` is told when a key is generated. Throws
 * EncryptionKeysMissingError on PostgreSQL without ENCRYPTION_KEYS.
 */
export async function localKeyring(settings: LocalKeySettings, warn: (message: string) => void = () => {}): Promise<Keyring> {
  if (settings.ENCRYPTION_KEYS && settings.ENCRYPTION_KEYS.trim() !== "") return parseEncryptionKeys(settings.ENCRYPTION_KEYS);
  if (settings.DATABASE_URL) {
    throw new EncryptionKeysMissingError("the configuration of a platform on PostgreSQL (DATABASE_URL): every process sharing the database needs the same keys, so none is generated");
  }
  const dataDir = settings.DATA_DIR ?? ".data/pglite";
  if (dataDir === "memory://") return parseEncryptionKeys(generateKeyEntry("memory"), "a generated in-memory key");
  const file = keyFilePath(dataDir);
  let text: string | undefined;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  if (text === undefined) {
    text = `${generateKeyEntry("local1")}\n`;
    await mkdir(dirname(file), { recursive: true });
    // "wx": two processes starting at once on one data directory must not both write a key.
    await writeFile(file, text, { mode: 0o600, flag: "wx" }).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
      text = await readFile(file, "utf8");
    });
    warn(`ENCRYPTION_KEYS is not set: secrets in the embedded database are encrypted with a key generated into ${file} (keep it with the database; set ENCRYPTION_KEYS in production, docs/secrets.md)`);
  }
  await chmod(file, 0o600).catch(() => {});
  return parseEncryptionKeys(text.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#")).join(","), file);
}

/**
 * Installs the local platform's keyring: the configuration's ENCRYPTION_KEYS, else one already in
 * use by this process (installed, or the process environment's), else `localKeyring`. Returns it.
 */
export async function installLocalKeyring(settings: LocalKeySettings, warn: (message: string) => void = () => {}): Promise<Keyring> {
  const keyring = settings.ENCRYPTION_KEYS?.trim() ? parseEncryptionKeys(settings.ENCRYPTION_KEYS) : (keyringIfAny() ?? (await localKeyring(settings, warn)));
  useKeyring(keyring);
  return keyring;
}
