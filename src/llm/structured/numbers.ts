// JSON numbers as grammar, bounded so that generation ends and every value survives JSON.parse
// exactly: integers of at most 15 digits (below 2^53), and fractions with at most 15 significant
// digits in all (so no fraction rounds onto an excluded bound: decimals of <= 15 digits stay
// distinct as doubles). No exponents. Ranges become digit grammars (no leading zeros).

import type { GrammarBuilder, Sequence } from './grammar.js';

export const MAX_INTEGER_DIGITS = 15;
/** The largest magnitude an integer may have. */
export const INTEGER_LIMIT = 10 ** MAX_INTEGER_DIGITS - 1;
const MAX_SIGNIFICANT = 15;

/** One end of a range of numbers: `value` may be infinite. */
export interface Bound {
  value: number;
  exclusive: boolean;
}

export class JsonNumbers {
  private readonly fractions = new Map<number, Sequence>();
  constructor(private readonly b: GrammarBuilder) {}

  /** Integers in [lo, hi] (integers, clipped to INTEGER_LIMIT), or null if none. */
  integer(lo: number, hi: number): Sequence | null {
    const alternatives = this.integerPieces(Math.max(lo, -INTEGER_LIMIT), Math.min(hi, INTEGER_LIMIT));
    return alternatives.length === 0 ? null : this.b.choice(...alternatives);
  }

  /**
   * Numbers between two integer (or infinite) bounds: the integers in range, and fractions
   * M.ddd / -M.ddd only where every value they can spell stays in range.
   */
  number(lo: Bound, hi: Bound): Sequence | null {
    const intLo = lo.value === -Infinity ? -INTEGER_LIMIT : lo.exclusive ? lo.value + 1 : lo.value;
    const intHi = hi.value === Infinity ? INTEGER_LIMIT : hi.exclusive ? hi.value - 1 : hi.value;
    const alternatives = this.integerPieces(Math.max(intLo, -INTEGER_LIMIT), Math.min(intHi, INTEGER_LIMIT));
    const maxFractional = 10 ** (MAX_SIGNIFICANT - 1) - 1; // leaves at least one fraction digit
    // +M.ddd lies in [M, M + 1).
    const posLo = Math.max(0, lo.value === -Infinity ? 0 : lo.exclusive ? lo.value + 1 : lo.value);
    const posHi = Math.min(maxFractional, hi.value === Infinity ? Infinity : hi.value - 1);
    for (const piece of this.naturalByLength(posLo, posHi)) alternatives.push([...piece.seq, ...this.fraction(piece.length, false)]);
    // An exclusive lower bound M itself: M.ddd with a non-zero digit lies in (M, M + 1).
    if (lo.exclusive && lo.value >= 0 && lo.value <= maxFractional && lo.value + 1 <= hi.value) {
      alternatives.push([...this.b.literal(String(lo.value)), ...this.fraction(String(lo.value).length, true)]);
    }
    // -M.ddd lies in (-(M + 1), -M].
    const negLo = Math.max(0, hi.value === Infinity ? 0 : hi.exclusive ? -hi.value + 1 : -hi.value);
    const negHi = Math.min(maxFractional, lo.value === -Infinity ? Infinity : -lo.value - 1);
    for (const piece of this.naturalByLength(negLo, negHi)) alternatives.push([...this.b.literal('-'), ...piece.seq, ...this.fraction(piece.length, false)]);
    // An exclusive upper bound -M: -M.ddd with a non-zero digit lies in (-(M + 1), -M).
    if (hi.exclusive && hi.value <= 0 && -hi.value <= maxFractional && hi.value - 1 >= lo.value) {
      alternatives.push([...this.b.literal(`-${-hi.value}`), ...this.fraction(String(-hi.value).length, true)]);
    }
    return alternatives.length === 0 ? null : this.b.choice(...alternatives);
  }

  private integerPieces(lo: number, hi: number): Sequence[] {
    const out: Sequence[] = [];
    if (lo > hi) return out;
    for (const piece of this.naturalByLength(Math.max(lo, 0), hi)) out.push(piece.seq);
    // Negative integers: magnitudes 1.. (never "-0").
    for (const piece of this.naturalByLength(Math.max(1, -Math.min(hi, -1)), -lo)) out.push([...this.b.literal('-'), ...piece.seq]);
    return out;
  }

  /** "." then 1..(15 - digits of the integer part) digits, with `nonZero` not all zeros. */
  private fraction(intDigits: number, nonZero: boolean): Sequence {
    const n = MAX_SIGNIFICANT - intDigits;
    const key = nonZero ? -n : n;
    let seq = this.fractions.get(key);
    if (!seq) {
      const b = this.b;
      const digit = b.bytes([[0x30, 0x39]]);
      // Not all zeros: zeros, then a non-zero digit, then any digits (one way to spell each).
      let digits: Sequence = [];
      if (nonZero) for (let z = n - 1; z >= 0; z--) digits = b.rule([[...b.bytes([[0x31, 0x39]]), ...b.repeat(digit, 0, n - 1 - z)], ...(z < n - 1 ? [[...b.literal('0'), ...digits]] : [])]);
      else digits = b.repeat(digit, 1, n);
      seq = [...b.literal('.'), ...digits];
      this.fractions.set(key, seq);
    }
    return seq;
  }

  /** The non-negative integers in [lo, hi] without leading zeros, one piece per digit count. */
  private naturalByLength(lo: number, hi: number): Array<{ length: number; seq: Sequence }> {
    const out: Array<{ length: number; seq: Sequence }> = [];
    if (lo > hi || hi < 0) return out;
    for (let length = String(lo).length; length <= String(hi).length; length++) {
      const a = length === 1 ? lo : Math.max(lo, 10 ** (length - 1));
      const b = Math.min(hi, 10 ** length - 1);
      if (a <= b) out.push({ length, seq: this.sameLength(String(a), String(b)) });
    }
    return out;
  }

  /** Digit strings x..y of one length: the classic split into at most three branches per digit. */
  private sameLength(x: string, y: string): Sequence {
    if (x.length === 0) return [];
    if (x === y) return this.b.literal(x);
    const b = this.b;
    const digits = (lo: number, hi: number) => b.bytes([[0x30 + lo, 0x30 + hi]]);
    const any = (k: number) => Array.from({ length: k }, () => digits(0, 9)).flat();
    const x0 = Number(x[0]);
    const y0 = Number(y[0]);
    const restX = x.slice(1);
    const restY = y.slice(1);
    const k = restX.length;
    if (x0 === y0) return [...digits(x0, x0), ...this.sameLength(restX, restY)];
    const lowFull = /^0*$/.test(restX);
    const highFull = /^9*$/.test(restY);
    const alternatives: Sequence[] = [];
    if (!lowFull) alternatives.push([...digits(x0, x0), ...this.sameLength(restX, '9'.repeat(k))]);
    const midLo = lowFull ? x0 : x0 + 1;
    const midHi = highFull ? y0 : y0 - 1;
    if (midLo <= midHi) alternatives.push([...digits(midLo, midHi), ...any(k)]);
    if (!highFull) alternatives.push([...digits(y0, y0), ...this.sameLength('0'.repeat(k), restY)]);
    return b.choice(...alternatives);
  }
}
