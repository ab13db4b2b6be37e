// The benches' tables: Markdown, the first column left-aligned and the figures right-aligned, so
// that a run's output pastes into bench/README.md as it is.

export type Cell = string | number;

/** Prints `rows` (one object per row, the keys of the first as the columns), numbers through `format`. */
export function printTable(rows: Array<Record<string, Cell>>, format: (v: number) => string): void {
  const cols = Object.keys(rows[0] ?? {});
  const cells = rows.map((r) => cols.map((c) => {
    const v = r[c] ?? '';
    return typeof v === 'number' ? format(v) : v;
  }));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  console.log(`| ${cols.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`);
  console.log(`|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const r of cells) console.log(`| ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`);
}
