/** Plain-text and Markdown tables for the comparison and the security check. */

/** Columns padded to their widest cell; long cells wrap at `maxWidth`. */
export function textTable(headers: string[], rows: string[][], maxWidth = 48): string {
  const wrap = (cell: string): string[] => {
    const lines: string[] = [];
    for (const part of cell.split("\n")) {
      let line = "";
      for (const word of part.split(" ")) {
        if (line && line.length + 1 + word.length > maxWidth) {
          lines.push(line);
          line = word;
        } else line = line ? `${line} ${word}` : word;
      }
      lines.push(line);
    }
    return lines;
  };
  const all = [headers, ...rows].map((row) => row.map(wrap));
  const widths = headers.map((_, c) => Math.max(...all.map((row) => Math.max(...(row[c] ?? [""]).map((l) => l.length)))));
  const rule = widths.map((w) => "-".repeat(w)).join("-+-");
  const render = (row: string[][]) => {
    const height = Math.max(...row.map((cell) => cell.length));
    return Array.from({ length: height }, (_, i) => row.map((cell, c) => (cell[i] ?? "").padEnd(widths[c]!)).join(" | ").trimEnd()).join("\n");
  };
  return [render(all[0]!), rule, ...all.slice(1).map(render)].join("\n");
}

/** A GitHub-flavoured Markdown table; newlines in cells become `<br>`, pipes are escaped. */
export function markdownTable(headers: string[], rows: string[][]): string {
  const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, "<br>");
  return [`| ${headers.map(cell).join(" | ")} |`, `|${headers.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`)].join("\n");
}
