/** Plain-text tables for people; `--json` bypasses all of this. */

export type Column<T> = { header: string; value: (row: T) => unknown };

function cell(value: unknown): string {
  if (value === null || value === undefined) return "-";
  if (typeof value === "string") return value.replace(/\s+/g, " ");
  if (value instanceof Date) return value.toISOString();
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** Renders rows as aligned columns; long cells are cut at 60 characters. */
export function table<T>(rows: T[], columns: Column<T>[]): string {
  const cells = rows.map((r) => columns.map((c) => {
    const s = cell(c.value(r));
    return s.length > 60 ? `${s.slice(0, 59)}…` : s;
  }));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
  const line = (parts: string[]) => parts.map((p, i) => p.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(columns.map((c) => c.header.toUpperCase())), ...cells.map(line)].join("\n") + "\n";
}

/** Renders one object as `key: value` lines. */
export function record(obj: Record<string, unknown>): string {
  const keys = Object.keys(obj);
  const width = Math.max(0, ...keys.map((k) => k.length));
  return keys.map((k) => `${k.padEnd(width)}  ${cell(obj[k])}`).join("\n") + "\n";
}

export function printJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + "\n";
}
