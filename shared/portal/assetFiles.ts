/**
 * Reads one of the portal page's files from this folder. The cloud bundles have no such folder:
 * functions/build.ts replaces this module with one that holds the files' text (read at build), as
 * it does the admin page's (shared/admin/assetFiles.ts).
 */
import { readFile } from "node:fs/promises";

export function readAssetFile(name: string): Promise<string> {
  return readFile(new URL(`./${name}`, import.meta.url), "utf8");
}
