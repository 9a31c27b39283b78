/**
 * "Did you mean …?" for a mistyped command, action or option: the known word nearest by edit
 * distance, when it is near enough to be a typo (a third of the word, at least 2 edits), else none.
 * Twenty lines of a textbook algorithm; not worth a dependency.
 */

/** Levenshtein distance (insertions, deletions, substitutions), one row at a time. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length]!;
}

/** The candidate nearest to `word`, if it is close enough to be what was meant. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const limit = Math.max(2, Math.floor(word.length / 3));
  let best: { candidate: string; d: number } | undefined;
  for (const candidate of candidates) {
    const d = distance(word.toLowerCase(), candidate.toLowerCase());
    if (d <= limit && (!best || d < best.d)) best = { candidate, d };
  }
  return best?.candidate;
}

/** `; did you mean "x"?` for `word` among `candidates`, or "" when nothing is close. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const near = closest(word, candidates);
  return near ? `; did you mean ${JSON.stringify(near)}?` : "";
}
