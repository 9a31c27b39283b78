/**
 * Must-show: the core does not import the example domain. Every module under shared/ and
 * functions/ is read and its import specifiers (static, dynamic, re-exports) checked: none may
 * reach examples/. The demo loads the example as a user's module is loaded (INBOUND_HANDLERS),
 * never by import.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'`]([^"'`]+)["'`]/g;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sources(join(dir, d.name)) : /\.(ts|mts|js|mjs)$/.test(d.name) ? [join(dir, d.name)] : []);
}

/** `file → specifier` for every import that resolves into examples/. */
export function examplesImports(files: string[]): string[] {
  const examples = join(root, "examples");
  return files.flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(SPECIFIER)]
      .map((m) => m[1]!)
      .filter((spec) => spec.includes("examples") && (!spec.startsWith(".") || resolve(dirname(file), spec).startsWith(examples)))
      .map((spec) => `${relative(root, file)} → ${spec}`));
}

describe("the core and the example domain", () => {
  it("nothing in shared/ or functions/ imports examples/", () => {
    expect(examplesImports([...sources(join(root, "shared")), ...sources(join(root, "functions"))])).toEqual([]);
  });

  it("the check sees static, dynamic and re-export imports (so the test above can fail)", () => {
    const probe = join(root, "shared", "inbound", "probe.ts");
    const text = [
      'import { orders } from "../../examples/orders/handlers.js";',
      'export * from "../../examples/orders/handlers.js";',
      'const m = await import("../../examples/orders/handlers.js");',
      'import "../../examples/orders/handlers.js";',
    ];
    const found = text.flatMap((line) => [...line.matchAll(SPECIFIER)].map((m) => m[1]!))
      .filter((spec) => resolve(dirname(probe), spec).startsWith(join(root, "examples")));
    expect(found).toHaveLength(4);
  });
});
