// Plain aligned columns for list commands, and aligned "label: value" lines for one resource.

export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/** `label:  value` lines with the values in one column. */
export function formatFields(fields: Array<[label: string, value: string]>): string {
  const width = Math.max(0, ...fields.map(([label]) => label.length + 1));
  return fields.map(([label, value]) => `${`${label}:`.padEnd(width)}  ${value}`.trimEnd()).join('\n') + '\n';
}

export const isoTime = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z'));

/** 1536 -> "1.5 KiB": sizes people read, in powers of 1024. */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}
