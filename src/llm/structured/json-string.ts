// JSON string literals as grammar: any string (all the escapes JSON allows), strings of bounded
// length, strings that follow a DFA (pattern, format) and object keys other than a finite set.
// Every character of the grammar is one code point, so lengths count as ajv counts them
// (code points). Where a DFA decides the characters, each is emitted in its one canonical
// JSON.stringify form (raw, or escaped when JSON must escape it): one spelling per string.

import type { Dfa } from './automaton.js';
import { ANY_CHAR, intersect, normalize, rangesKey, subtract, type Ranges } from './code-points.js';
import { GrammarTooLargeError, type GrammarBuilder, type Sequence } from './grammar.js';

// Characters that may stand raw in a JSON string: all but the controls, `"` and `\`.
const RAW: Ranges = subtract(ANY_CHAR, [
  [0, 0x1f],
  [0x22, 0x22],
  [0x5c, 0x5c],
]);
const MUST_ESCAPE: Ranges = [
  [0, 0x1f],
  [0x22, 0x22],
  [0x5c, 0x5c],
];
const HEX: ReadonlyArray<readonly [number, number]> = [
  [0x30, 0x39],
  [0x41, 0x46],
  [0x61, 0x66],
];

export class JsonStrings {
  private anyUnitRule: Sequence | undefined;
  private readonly canonicalUnits = new Map<string, Sequence>();

  constructor(private readonly b: GrammarBuilder) {}

  /** One character in any JSON spelling: raw, a short escape, or \uXXXX (no surrogate halves). */
  anyUnit(): Sequence {
    if (this.anyUnitRule) return this.anyUnitRule;
    const b = this.b;
    const hex = b.bytes(HEX);
    // \uXXXX outside D800-DFFF: first digit not d/D, or d/D then 0-7.
    const notSurrogate = b.choice(
      [...b.bytes([[0x30, 0x39], [0x41, 0x43], [0x45, 0x46], [0x61, 0x63], [0x65, 0x66]]), ...hex, ...hex, ...hex],
      [...b.bytes([[0x44, 0x44], [0x64, 0x64]]), ...b.bytes([[0x30, 0x37]]), ...hex, ...hex],
    );
    const escape = b.choice(b.bytes([[0x22, 0x22], [0x5c, 0x5c], [0x2f, 0x2f], [0x62, 0x62], [0x66, 0x66], [0x6e, 0x6e], [0x72, 0x72], [0x74, 0x74]]), [...b.literal('u'), ...notSurrogate]);
    this.anyUnitRule = b.rule([b.chars(RAW), [...b.literal('\\'), ...escape]]);
    return this.anyUnitRule;
  }

  /** One character of `ranges`, spelt as JSON.stringify spells it. */
  canonicalUnit(ranges: Ranges): Sequence {
    const key = rangesKey(normalize(ranges));
    const cached = this.canonicalUnits.get(key);
    if (cached) return cached;
    const alternatives: Sequence[] = [];
    const raw = intersect(ranges, RAW);
    if (raw.length > 0) alternatives.push(this.b.chars(raw));
    for (const [lo, hi] of intersect(ranges, MUST_ESCAPE)) {
      for (let cp = lo; cp <= hi; cp++) alternatives.push(this.b.literal(JSON.stringify(String.fromCodePoint(cp)).slice(1, -1)));
    }
    if (alternatives.length === 0) throw new Error('an empty character set');
    const seq = this.b.choice(...alternatives);
    this.canonicalUnits.set(key, seq);
    return seq;
  }

  /** A string of min..max characters (max Infinity: unbounded). */
  string(min: number, max: number): Sequence {
    return [...this.b.literal('"'), ...this.b.repeat(this.anyUnit(), min, max), ...this.b.literal('"')];
  }

  /**
   * A string the DFA accepts with min..max characters, or null if there is none. The grammar
   * walks (DFA state, characters so far) and keeps only the pairs from which an accepting end is
   * still reachable, so generation can never wander into a dead end.
   */
  fromDfa(dfa: Dfa, min: number, max: number, maxNodes: number): Sequence | null {
    const finite = max !== Infinity;
    // Counted levels: 0..max, or 0..min where the last level means "min or more".
    const levels = (finite ? max : min) + 1;
    const q = dfa.states.length;
    if (q * levels > maxNodes) throw new GrammarTooLargeError(maxNodes);
    const next = (n: number) => (finite ? (n + 1 <= max ? n + 1 : -1) : Math.min(n + 1, min));
    const accepting = (s: number, n: number) => dfa.states[s]!.accepting && n >= min;
    const live = new Uint8Array(q * levels);
    const at = (s: number, n: number) => s * levels + n;
    const update = (n: number): boolean => {
      let changed = false;
      for (let s = 0; s < q; s++) {
        if (live[at(s, n)]) continue;
        const m = next(n);
        if (accepting(s, n) || (m >= 0 && dfa.states[s]!.transitions.some((t) => live[at(t.to, m)]))) {
          live[at(s, n)] = 1;
          changed = true;
        }
      }
      return changed;
    };
    // The top level may point to itself (unbounded): iterate it to a fixed point first.
    const top = levels - 1;
    while (update(top) && !finite);
    for (let n = top - 1; n >= 0; n--) update(n);
    if (!live[at(0, 0)]) return null;

    const ids = new Map<number, number>();
    const pending: Array<[number, number]> = [];
    const idOf = (s: number, n: number): number => {
      let id = ids.get(at(s, n));
      if (id === undefined) {
        id = this.b.declare();
        ids.set(at(s, n), id);
        pending.push([s, n]);
      }
      return id;
    };
    const start = idOf(0, 0);
    while (pending.length > 0) {
      const [s, n] = pending.pop()!;
      const alternatives: Sequence[] = [];
      const m = next(n);
      if (m >= 0) {
        for (const t of dfa.states[s]!.transitions) {
          if (live[at(t.to, m)]) alternatives.push([...this.canonicalUnit(t.ranges), ...this.b.ref(idOf(t.to, m))]);
        }
      }
      if (accepting(s, n)) alternatives.push([]);
      this.b.define(idOf(s, n), alternatives);
    }
    return [...this.b.literal('"'), ...this.b.ref(start), ...this.b.literal('"')];
  }

  /** Any string except those in `names`, canonically spelt (so no other spelling names one of them). */
  keyExcept(names: readonly string[]): Sequence {
    type Node = { terminal: boolean; children: Map<number, Node> };
    const root: Node = { terminal: false, children: new Map() };
    for (const name of names) {
      let node = root;
      for (const ch of name) {
        const cp = ch.codePointAt(0)!;
        if (cp >= 0xd800 && cp <= 0xdfff) break; // never generated: nothing to exclude past it
        let child = node.children.get(cp);
        if (!child) node.children.set(cp, (child = { terminal: false, children: new Map() }));
        node = child;
      }
      if ([...name].every((c) => !(c.codePointAt(0)! >= 0xd800 && c.codePointAt(0)! <= 0xdfff))) node.terminal = true;
    }
    const b = this.b;
    const anyTail = b.repeat(this.canonicalUnit(ANY_CHAR), 0, Infinity);
    const build = (node: Node): Sequence => {
      const alternatives: Sequence[] = [];
      if (!node.terminal) alternatives.push([]);
      for (const [cp, child] of node.children) alternatives.push([...this.canonicalUnit([[cp, cp]]), ...build(child)]);
      const others = subtract(ANY_CHAR, [...node.children.keys()].map((cp) => [cp, cp] as [number, number]));
      if (others.length > 0) alternatives.push([...this.canonicalUnit(others), ...anyTail]);
      return b.rule(alternatives);
    };
    return [...b.literal('"'), ...build(root), ...b.literal('"')];
  }
}
