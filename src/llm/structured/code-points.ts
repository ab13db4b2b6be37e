// Sets of Unicode code points as sorted, disjoint, inclusive [lo, hi] ranges: the alphabet of the
// regular expressions and automata that string constraints compile through.

export type Ranges = ReadonlyArray<readonly [number, number]>;

export const MAX_CODE_POINT = 0x10ffff;
/** Every code point a JSON string can hold as one character (surrogates are never one). */
export const ANY_CHAR: Ranges = [
  [0, 0xd7ff],
  [0xe000, MAX_CODE_POINT],
];

/** Sorted and merged (adjacent ranges join). */
export function normalize(ranges: Ranges): Array<[number, number]> {
  const sorted = ranges.map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as [number, number]).sort((x, y) => x[0] - y[0]);
  const out: Array<[number, number]> = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else out.push([r[0], r[1]]);
  }
  return out;
}

/** The code points of ANY_CHAR that are not in `ranges`. */
export function complement(ranges: Ranges): Array<[number, number]> {
  return subtract(ANY_CHAR, ranges);
}

export function intersect(a: Ranges, b: Ranges): Array<[number, number]> {
  const x = normalize(a);
  const y = normalize(b);
  const out: Array<[number, number]> = [];
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    const lo = Math.max(x[i]![0], y[j]![0]);
    const hi = Math.min(x[i]![1], y[j]![1]);
    if (lo <= hi) out.push([lo, hi]);
    if (x[i]![1] < y[j]![1]) i++;
    else j++;
  }
  return out;
}

export function subtract(a: Ranges, b: Ranges): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const y = normalize(b);
  for (const [lo, hi] of normalize(a)) {
    let next = lo;
    for (const [blo, bhi] of y) {
      if (bhi < next || blo > hi) continue;
      if (blo > next) out.push([next, blo - 1]);
      next = Math.max(next, bhi + 1);
    }
    if (next <= hi) out.push([next, hi]);
  }
  return out;
}

export const isEmpty = (ranges: Ranges) => ranges.length === 0;

export const rangesKey = (ranges: Ranges) => ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(',');
