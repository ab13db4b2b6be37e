// Plain aligned columns for list commands.

export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

export const isoTime = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z'));
