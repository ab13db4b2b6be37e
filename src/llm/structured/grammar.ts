// A context-free grammar over bytes, the form in which the native sampler takes a constraint:
// rules of alternatives of sequences, each item a set of bytes or a reference to a rule. The
// grammar is over the UTF-8 bytes of the text (the tokens' bytes), so a character class of
// code points becomes the byte sequences that encode them.
//
// Built with GrammarBuilder (JSON Schema, regular expressions and tool calls compile into one),
// encoded by encodeGrammar() into the Int32Array that llmCompileGrammar reads:
//   [1 (version), n_rules, root, then per rule: n_alts, per alternative: n_items, per item:
//    0 rule_id | 1 w0 .. w7 (a 256-bit byte set, bit b of word b >> 5)]
// The native side checks every count and index, and refuses left recursion.

/** One item of a sequence. */
export type Item = { readonly rule: number } | { readonly bytes: Uint32Array };
/** A sequence of items; the empty sequence matches the empty string. */
export type Sequence = readonly Item[];

export interface Grammar {
  readonly rules: ReadonlyArray<ReadonlyArray<Sequence>>;
  readonly root: number;
}

/** The grammar would exceed its size limit (items in all rules). */
export class GrammarTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the grammar would exceed ${limit} items`);
    this.name = 'GrammarTooLargeError';
  }
}

/** A set of bytes from inclusive [lo, hi] ranges. */
export function byteSet(ranges: ReadonlyArray<readonly [number, number]>): Uint32Array {
  const words = new Uint32Array(8);
  for (const [lo, hi] of ranges) {
    for (let b = lo; b <= hi; b++) words[b >> 5]! |= 1 << (b & 31);
  }
  return words;
}

const isEmptySet = (words: Uint32Array) => words.every((w) => w === 0);

/** The UTF-8 encodings of the code points in [lo, hi], as sequences of byte ranges. */
function utf8Ranges(lo: number, hi: number): Array<Array<[number, number]>> {
  // Split at the encoding length boundaries and at the surrogates (never encoded), then at the
  // points where the continuation bytes wrap, recursively (the classic range-splitting method).
  const bounds: Array<[number, number]> = [
    [0, 0x7f],
    [0x80, 0x7ff],
    [0x800, 0xd7ff],
    [0xe000, 0xffff],
    [0x10000, 0x10ffff],
  ];
  const out: Array<Array<[number, number]>> = [];
  for (const [blo, bhi] of bounds) {
    const a = Math.max(lo, blo);
    const b = Math.min(hi, bhi);
    if (a <= b) splitSameLength(a, b, out);
  }
  return out;
}

function encode(cp: number): number[] {
  return [...Buffer.from(String.fromCodePoint(cp), 'utf8')];
}

function splitSameLength(lo: number, hi: number, out: Array<Array<[number, number]>>): void {
  const a = encode(lo);
  const b = encode(hi);
  const n = a.length;
  if (n === 1) {
    out.push([[a[0]!, b[0]!]]);
    return;
  }
  // Find the first byte where they differ; bytes after it must span their full 0x80-0xBF range on
  // both sides for [lo, hi] to be one product of ranges.
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  if (i === n) {
    out.push(a.map((x) => [x, x]));
    return;
  }
  const tailFull = (bytes: number[], value: number) => bytes.slice(i + 1).every((x) => x === value);
  if (tailFull(a, 0x80) && tailFull(b, 0xbf)) {
    const seq: Array<[number, number]> = [];
    for (let k = 0; k < n; k++) seq.push(k < i ? [a[k]!, a[k]!] : k === i ? [a[k]!, b[k]!] : [0x80, 0xbf]);
    out.push(seq);
    return;
  }
  // Split at the boundary of byte i + 1's block: [lo, m] and [m + 1, hi].
  const shift = 6 * (n - 1 - i);
  const block = 1 << shift;
  if (!tailFull(a, 0x80)) {
    const m = (Math.floor(lo / block) + 1) * block - 1;
    splitSameLength(lo, m, out);
    if (m + 1 <= hi) splitSameLength(m + 1, hi, out);
    return;
  }
  const m = Math.floor(hi / block) * block;
  splitSameLength(lo, m - 1, out);
  splitSameLength(m, hi, out);
}

/**
 * Builds a grammar rule by rule. Helpers that need repetition or choice create rules of their own;
 * every method returns a Sequence to splice into another.
 */
export class GrammarBuilder {
  private readonly rules: Array<Sequence[] | null> = [];
  private items = 0;
  private readonly literalCache = new Map<string, number>();

  constructor(readonly maxItems = 1_000_000) {}

  /** Declares a rule to define later (for recursion); returns its id. */
  declare(): number {
    this.rules.push(null);
    return this.rules.length - 1;
  }

  define(id: number, alternatives: Sequence[]): void {
    if (this.rules[id] !== null) throw new Error(`rule ${id} is already defined`);
    for (const alt of alternatives) this.items += alt.length + 1;
    if (this.items > this.maxItems) throw new GrammarTooLargeError(this.maxItems);
    this.rules[id] = alternatives;
  }

  /** A new rule with these alternatives, as a one-item sequence. */
  rule(alternatives: Sequence[]): Sequence {
    const id = this.declare();
    this.define(id, alternatives);
    return [{ rule: id }];
  }

  ref(id: number): Sequence {
    return [{ rule: id }];
  }

  /** The exact UTF-8 bytes of `text`. */
  literal(text: string): Sequence {
    return [...Buffer.from(text, 'utf8')].map((b) => ({ bytes: byteSet([[b, b]]) }));
  }

  /** One byte from the ranges. */
  bytes(ranges: ReadonlyArray<readonly [number, number]>): Sequence {
    const set = byteSet(ranges);
    if (isEmptySet(set)) throw new Error('an empty byte set matches nothing');
    return [{ bytes: set }];
  }

  /**
   * One character (its whole UTF-8 encoding) whose code point lies in one of the ranges; with
   * `negate`, one whose code point lies in none of them. Surrogates are never matched.
   */
  chars(ranges: ReadonlyArray<readonly [number, number]>, negate = false): Sequence {
    let set = [...ranges].map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as [number, number]).sort((x, y) => x[0] - y[0]);
    const merged: Array<[number, number]> = [];
    for (const r of set) {
      const last = merged[merged.length - 1];
      if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
      else merged.push([r[0], r[1]]);
    }
    set = merged;
    if (negate) {
      const inverse: Array<[number, number]> = [];
      let next = 0;
      for (const [a, b] of set) {
        if (a > next) inverse.push([next, a - 1]);
        next = Math.max(next, b + 1);
      }
      if (next <= 0x10ffff) inverse.push([next, 0x10ffff]);
      set = inverse;
    }
    const seqs: Array<Array<[number, number]>> = [];
    for (const [a, b] of set) seqs.push(...utf8Ranges(a, b));
    if (seqs.length === 0) throw new Error('an empty character class matches nothing');
    // Single-byte sequences share one byte set; longer ones are alternatives.
    const single = seqs.filter((s) => s.length === 1).map((s) => s[0]!);
    const multi = seqs.filter((s) => s.length > 1);
    const alternatives: Sequence[] = multi.map((s) => s.map((r) => ({ bytes: byteSet([r]) })));
    if (single.length > 0) {
      const item: Sequence = [{ bytes: byteSet(single) }];
      if (alternatives.length === 0) return item;
      alternatives.unshift(item);
    }
    const key = JSON.stringify(seqs);
    const cached = this.literalCache.get(key);
    if (cached !== undefined) return this.ref(cached);
    const seq = this.rule(alternatives);
    this.literalCache.set(key, (seq[0] as { rule: number }).rule);
    return seq;
  }

  /** Any one of the sequences. */
  choice(...alternatives: Sequence[]): Sequence {
    if (alternatives.length === 1) return alternatives[0]!;
    return this.rule(alternatives);
  }

  /** The sequence or nothing. */
  optional(seq: Sequence): Sequence {
    return this.rule([seq, []]);
  }

  /**
   * `seq` repeated between min and max times (max Infinity: unbounded). `seq` must not match the
   * empty string (the native side refuses the left recursion that would make).
   */
  repeat(seq: Sequence, min: number, max: number): Sequence {
    if (min < 0 || max < min) throw new Error(`bad repetition {${min},${max}}`);
    const out: Item[] = [];
    for (let i = 0; i < min; i++) out.push(...seq);
    if (max === Infinity) {
      const star = this.declare();
      this.define(star, [[...seq, { rule: star }], []]);
      out.push({ rule: star });
    } else if (max > min) {
      // X? nested: (X (X (X)?)?)? so that each extra copy needs the one before it.
      let tail: Sequence = [];
      for (let i = min; i < max; i++) tail = this.rule([[...seq, ...tail], []]);
      out.push(...tail);
    }
    return out;
  }

  /** `item` repeated min..max times with `separator` between (JSON arrays, objects). */
  separated(item: Sequence, separator: Sequence, min: number, max: number): Sequence {
    if (max === 0) return [];
    const rest = this.repeat([...separator, ...item], Math.max(0, min - 1), max - 1);
    const some: Sequence = [...item, ...rest];
    return min === 0 ? this.optional(some) : some;
  }

  /**
   * The grammar of `root`. Alternatives that reference a rule with no finite derivation (a
   * recursion with no way out) are dropped: a sampler that entered one could never finish.
   */
  build(root: Sequence): Grammar {
    const id = this.declare();
    this.define(id, [root]);
    const rules = this.rules.map((r, i) => {
      if (r === null) throw new Error(`rule ${i} was declared but never defined`);
      return r;
    });
    const productive = productiveRules(rules);
    if (!productive[id]) throw new Error('the grammar matches no string (every derivation recurses forever)');
    const finite = (seq: Sequence) => seq.every((item) => !('rule' in item) || productive[item.rule]);
    const pruned = rules.map((alternatives, i) => (productive[i] && !alternatives.every(finite) ? alternatives.filter(finite) : alternatives));
    return { rules: pruned, root: id };
  }
}

/** For each rule, whether it derives some finite string (a worklist from the terminals up). */
function productiveRules(rules: ReadonlyArray<ReadonlyArray<Sequence>>): boolean[] {
  const productive = rules.map(() => false);
  const waiting: number[] = []; // per alternative: rule items not yet known productive
  const owner: number[] = [];
  const uses: number[][] = rules.map(() => []); // per rule: the alternatives that reference it, once per use
  const ready: number[] = [];
  for (const [r, alternatives] of rules.entries()) {
    for (const seq of alternatives) {
      const alt = owner.length;
      owner.push(r);
      let n = 0;
      for (const item of seq) {
        if ('rule' in item) {
          uses[item.rule]!.push(alt);
          n++;
        }
      }
      waiting.push(n);
      if (n === 0) ready.push(r);
    }
  }
  while (ready.length > 0) {
    const r = ready.pop()!;
    if (productive[r]) continue;
    productive[r] = true;
    for (const alt of uses[r]!) if (--waiting[alt]! === 0) ready.push(owner[alt]!);
  }
  return productive;
}

/** The grammar in the Int32Array form that the addon's llmCompileGrammar reads. */
export function encodeGrammar(g: Grammar): Int32Array {
  const out: number[] = [1, g.rules.length, g.root];
  for (const alternatives of g.rules) {
    out.push(alternatives.length);
    for (const seq of alternatives) {
      out.push(seq.length);
      for (const item of seq) {
        if ('rule' in item) out.push(0, item.rule);
        else out.push(1, ...Array.from(item.bytes, (w) => w | 0));
      }
    }
  }
  return Int32Array.from(out);
}

/** Whether `text` (as UTF-8) is a whole sentence of the grammar: a reference matcher for tests and checks. */
export function grammarMatches(g: Grammar, text: string | Uint8Array): boolean {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  // Earley recognition over bytes: items (rule, alt, dot, origin).
  type EItem = { rule: number; alt: number; dot: number; origin: number };
  const sets: Array<Map<string, EItem>> = [];
  const add = (k: number, it: EItem) => {
    const key = `${it.rule},${it.alt},${it.dot},${it.origin}`;
    const set = sets[k]!;
    if (set.has(key)) return false;
    set.set(key, it);
    return true;
  };
  for (let k = 0; k <= bytes.length; k++) sets.push(new Map());
  g.rules[g.root]!.forEach((_, alt) => add(0, { rule: g.root, alt, dot: 0, origin: 0 }));
  for (let k = 0; k <= bytes.length; k++) {
    const queue = [...sets[k]!.values()];
    while (queue.length > 0) {
      const it = queue.shift()!;
      const seq = g.rules[it.rule]![it.alt]!;
      if (it.dot === seq.length) {
        // Complete: advance every item in the origin set waiting on this rule.
        for (const parent of [...sets[it.origin]!.values()]) {
          const ps = g.rules[parent.rule]![parent.alt]!;
          const next = ps[parent.dot];
          if (next && 'rule' in next && next.rule === it.rule) {
            const adv = { ...parent, dot: parent.dot + 1 };
            if (add(k, adv)) queue.push(adv);
          }
        }
        continue;
      }
      const item = seq[it.dot]!;
      if ('rule' in item) {
        g.rules[item.rule]!.forEach((_, alt) => {
          const pred = { rule: item.rule, alt, dot: 0, origin: k };
          if (add(k, pred)) queue.push(pred);
        });
        // A nullable rule completed at k already: advance over it.
        for (const done of [...sets[k]!.values()]) {
          if (done.rule === item.rule && done.origin === k && done.dot === g.rules[done.rule]![done.alt]!.length) {
            const adv = { ...it, dot: it.dot + 1 };
            if (add(k, adv)) queue.push(adv);
          }
        }
      } else if (k < bytes.length) {
        const b = bytes[k]!;
        if ((item.bytes[b >> 5]! >>> (b & 31)) & 1) add(k + 1, { ...it, dot: it.dot + 1 });
      }
    }
  }
  for (const it of sets[bytes.length]!.values()) {
    if (it.rule === g.root && it.origin === 0 && it.dot === g.rules[g.root]![it.alt]!.length) return true;
  }
  return false;
}
