/**
 * The cost-against-traffic picture of docs/comparison.md, written as SVG text (no browser or
 * image library): one line per cloud, traffic on a log scale, dollars on a linear one. A cloud
 * whose estimate leaves out unknown prices is drawn dashed and its legend says "at least".
 */

export interface ChartSeries {
  label: string;
  color: string;
  /** [webhooks a month in each direction, USD a month] */
  points: [number, number][];
  /** Items left out of the series (unknown prices). */
  unknown: string[];
}

const W = 900;
/** The plot's height; the legend below it adds a row per line of text. */
const PLOT_H = 420;
const M = { left: 70, right: 40, top: 40, bottom: 110 };
const LEGEND = { size: 11, row: 17, first: PLOT_H - M.bottom + 56, textX: M.left + 30 };
/** Characters a legend row holds: 0.6 em a character, wider than the average sans-serif glyph. */
const LEGEND_CHARS = Math.floor((W - LEGEND.textX - 10) / (0.6 * LEGEND.size));

/** Words into rows of at most `width` characters (a word longer than a row gets a row of its own). */
export function wrapText(text: string, width: number): string[] {
  const rows: string[] = [];
  for (const word of text.split(" ")) {
    const last = rows.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) rows[rows.length - 1] = `${last} ${word}`;
    else rows.push(word);
  }
  return rows;
}
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const traffic = (n: number) => (n >= 1e6 ? `${+(n / 1e6).toFixed(1)} M` : `${+(n / 1e3).toFixed(0)} k`);

/** A round step for about five ticks up to `max`. */
function niceStep(max: number): number {
  const raw = max / 5;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw)!;
}

export function costChartSvg(series: ChartSeries[], title: string): string {
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const [x0, x1] = [Math.log10(Math.min(...xs)), Math.log10(Math.max(...xs))];
  const step = niceStep(Math.max(...ys));
  const yMax = Math.ceil(Math.max(...ys) / step) * step;
  const px = (n: number) => M.left + ((Math.log10(n) - x0) / (x1 - x0 || 1)) * (W - M.left - M.right);
  const py = (usd: number) => PLOT_H - M.bottom - (usd / yMax) * (PLOT_H - M.top - M.bottom);
  // Every line left out is named, so the legend wraps rather than running off the right edge.
  const legends = series.map((s) => {
    const note = s.unknown.length > 0 ? ` — at least: leaves out ${s.unknown.length} line${s.unknown.length > 1 ? "s" : ""} of unknown price (${s.unknown.join(", ")})` : "";
    return wrapText(s.label + note, LEGEND_CHARS);
  });
  const height = LEGEND.first + legends.flat().length * LEGEND.row;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${height}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${esc(title)}</text>`,
  ];
  for (let y = 0; y <= yMax; y += step) {
    out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${py(y)}" y2="${py(y)}" stroke="#ddd"/>`, `<text x="${M.left - 6}" y="${py(y) + 4}" text-anchor="end">$${y}</text>`);
  }
  for (let e = Math.ceil(x0); e <= Math.floor(x1); e += 0.5) {
    const n = 10 ** e;
    out.push(`<line x1="${px(n)}" x2="${px(n)}" y1="${M.top}" y2="${PLOT_H - M.bottom}" stroke="#eee"/>`, `<text x="${px(n)}" y="${PLOT_H - M.bottom + 16}" text-anchor="middle">${traffic(n)}</text>`);
  }
  out.push(
    `<line x1="${M.left}" x2="${W - M.right}" y1="${PLOT_H - M.bottom}" y2="${PLOT_H - M.bottom}" stroke="black"/>`,
    `<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${PLOT_H - M.bottom}" stroke="black"/>`,
    `<text x="${(M.left + W - M.right) / 2}" y="${PLOT_H - M.bottom + 34}" text-anchor="middle">webhooks a month in each direction (log scale)</text>`,
    `<text transform="translate(16 ${(M.top + PLOT_H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">USD a month</text>`,
  );
  let row = 0;
  series.forEach((s, i) => {
    const d = s.points.map(([n, usd], j) => `${j === 0 ? "M" : "L"}${px(n).toFixed(1)},${py(usd).toFixed(1)}`).join(" ");
    const dash = s.unknown.length > 0 ? ` stroke-dasharray="6 4"` : "";
    out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2.5"${dash}><title>${esc(s.label)}</title></path>`);
    for (const [n, usd] of s.points) out.push(`<circle cx="${px(n).toFixed(1)}" cy="${py(usd).toFixed(1)}" r="2.5" fill="${s.color}"/>`);
    const ly = LEGEND.first + row * LEGEND.row;
    out.push(`<line x1="${M.left}" x2="${M.left + 24}" y1="${ly - 4}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2.5"${dash}/>`);
    for (const text of legends[i]!) out.push(`<text x="${LEGEND.textX}" y="${LEGEND.first + row++ * LEGEND.row}" font-size="${LEGEND.size}">${esc(text)}</text>`);
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}
