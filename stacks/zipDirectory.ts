/**
 * Zips a function directory in-process, deterministically (sorted entries, fixed timestamps),
 * and returns the path of the cached zip.
 *
 * Why not `TerraformAsset` with `AssetType.ARCHIVE`: cdktf builds each archive by spawning a
 * separate `node` process, which cost ~0.5-1 s per function (9 functions) and broke the 5 s
 * synth budget. A deterministic zip also keeps the content hash stable across machines, so an
 * unchanged function is never redeployed.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { crc32, deflateRawSync } from "node:zlib";

const DOS_DATE_1980_01_01 = (0 << 9) | (1 << 5) | 1;

interface Entry {
  name: string;
  data: Buffer;
  mode: number;
}

function listFiles(root: string, dir = root): Entry[] {
  const entries: Entry[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const stat = statSync(path);
    if (stat.isDirectory()) entries.push(...listFiles(root, path));
    else entries.push({ name: relative(root, path).split(sep).join("/"), data: readFileSync(path), mode: stat.mode & 0o777 });
  }
  return entries;
}

/** The zip bytes of a directory (deflate, no timestamps, unix permissions kept). */
export function zipBytes(dir: string): Buffer {
  return zipEntries(listFiles(dir));
}

function zipEntries(entries: Entry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, "utf8");
    const compressed = deflateRawSync(entry.data);
    const crc = crc32(entry.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt16LE(0, 10); // time
    local.writeUInt16LE(DOS_DATE_1980_01_01, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(compressed.length, 18);
    local.writeUInt32LE(entry.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by unix
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt16LE(0, 12);
    central.writeUInt16LE(DOS_DATE_1980_01_01, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(compressed.length, 20);
    central.writeUInt32LE(entry.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(((0o100000 | entry.mode) << 16) >>> 0, 38); // regular file + mode
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, compressed);
    centrals.push(central, name);
    offset += local.length + name.length + compressed.length;
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(centrals.length / 2, 8);
  end.writeUInt16LE(centrals.length / 2, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

/**
 * Zips `dir` into a cache file named by the hash of its files (names, modes, contents) and
 * returns its path; an unchanged directory is not compressed again.
 */
export function zipDirectory(dir: string): string {
  const entries = listFiles(dir);
  const hash = createHash("sha256");
  for (const e of entries) hash.update(`${e.name}\0${e.mode}\0${e.data.length}\0`).update(e.data);
  const cache = join(tmpdir(), "webhooks-function-zips");
  const path = join(cache, `${hash.digest("hex").slice(0, 32)}.zip`);
  if (!existsSync(path)) {
    mkdirSync(cache, { recursive: true });
    // Write then rename, so a concurrent synth never reads a half-written zip.
    const partial = `${path}.${process.pid}.tmp`;
    writeFileSync(partial, zipEntries(entries));
    renameSync(partial, path);
  }
  return path;
}
