// Regular expressions to deterministic automata over code points. A string constraint (pattern,
// format) becomes a DFA; two constraints meet by the product of their DFAs; the grammar then
// follows the DFA one character at a time (json-string.ts), so the grammar is never ambiguous
// however the pattern is written.

import { ANY_CHAR, intersect, normalize, type Ranges } from './code-points.js';
import type { RegexNode } from './regex.js';

export interface Dfa {
  /** State 0 is the start. */
  readonly states: ReadonlyArray<{ readonly accepting: boolean; readonly transitions: ReadonlyArray<{ readonly ranges: Ranges; readonly to: number }> }>;
}

/** The automaton would exceed its state limit. */
export class AutomatonTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the automaton would exceed ${limit} states`);
    this.name = 'AutomatonTooLargeError';
  }
}

export interface AutomatonLimits {
  maxStates: number;
  /** Called now and then; throws to stop the construction (a deadline). */
  check(): void;
}

interface NfaState {
  eps: number[];
  caret: number[]; // taken only at the start of the string (^)
  dollar: number[]; // taken only at its end ($)
  trans: Array<{ ranges: Ranges; to: number }>;
}

class Nfa {
  readonly states: NfaState[] = [];
  constructor(private readonly limits: AutomatonLimits) {}

  state(): number {
    if (this.states.length >= this.limits.maxStates) throw new AutomatonTooLargeError(this.limits.maxStates);
    if ((this.states.length & 1023) === 0) this.limits.check();
    this.states.push({ eps: [], caret: [], dollar: [], trans: [] });
    return this.states.length - 1;
  }

  /** Adds `node` starting at state `from`; returns the state where it ends. */
  add(node: RegexNode, from: number): number {
    switch (node.kind) {
      case 'chars': {
        const to = this.state();
        if (node.ranges.length > 0) this.states[from]!.trans.push({ ranges: node.ranges, to });
        return to;
      }
      case 'seq':
        return node.items.reduce((at, item) => this.add(item, at), from);
      case 'alt': {
        const exit = this.state();
        for (const option of node.options) {
          const start = this.state();
          this.states[from]!.eps.push(start);
          this.states[this.add(option, start)]!.eps.push(exit);
        }
        return exit;
      }
      case 'start':
      case 'end': {
        const to = this.state();
        this.states[from]![node.kind === 'start' ? 'caret' : 'dollar'].push(to);
        return to;
      }
      case 'repeat': {
        let at = from;
        for (let i = 0; i < node.min; i++) at = this.add(node.node, at);
        if (node.max === Infinity) {
          const loop = this.state();
          this.states[at]!.eps.push(loop);
          this.states[this.add(node.node, loop)]!.eps.push(loop);
          return loop;
        }
        const exit = this.state();
        for (let i = node.min; i < node.max; i++) {
          this.states[at]!.eps.push(exit);
          at = this.add(node.node, at);
        }
        this.states[at]!.eps.push(exit);
        return exit;
      }
    }
  }
}

/**
 * The DFA of the strings in which `pattern` matches, as JSON Schema's `pattern` does: anywhere
 * unless anchored (an unanchored match may have any text before and after it).
 */
export function patternDfa(pattern: RegexNode, limits: AutomatonLimits): Dfa {
  const nfa = new Nfa(limits);
  const before = nfa.state();
  nfa.states[before]!.trans.push({ ranges: ANY_CHAR, to: before });
  const start = nfa.state();
  nfa.states[before]!.eps.push(start);
  const end = nfa.add(pattern, start);
  const after = nfa.state();
  nfa.states[end]!.eps.push(after);
  nfa.states[after]!.trans.push({ ranges: ANY_CHAR, to: after });
  return determinize(nfa, before, after, limits);
}

/**
 * The states of a DFA under construction, each found once by its key: a new one is queued (with
 * what it stands for) for its transitions to be worked out, within the limits.
 */
class StateTable<Q> {
  readonly states: Array<{ accepting: boolean; transitions: Array<{ ranges: Ranges; to: number }> }> = [];
  readonly queue: Q[] = [];
  private readonly ids = new Map<string, number>();

  constructor(private readonly limits: AutomatonLimits) {}

  intern(key: string, item: Q, accepting: () => boolean): number {
    let id = this.ids.get(key);
    if (id === undefined) {
      if (this.states.length >= this.limits.maxStates) throw new AutomatonTooLargeError(this.limits.maxStates);
      if ((this.states.length & 63) === 0) this.limits.check();
      id = this.states.length;
      this.ids.set(key, id);
      this.states.push({ accepting: accepting(), transitions: [] });
      this.queue.push(item);
    }
    return id;
  }
}

function determinize(nfa: Nfa, start: number, universal: number, limits: AutomatonLimits): Dfa {
  const closure = (seeds: Iterable<number>, atStart: boolean, atEnd: boolean): number[] => {
    const seen = new Set<number>(seeds);
    const stack = [...seen];
    while (stack.length > 0) {
      const s = nfa.states[stack.pop()!]!;
      const edges = [...s.eps, ...(atStart ? s.caret : []), ...(atEnd ? s.dollar : [])];
      for (const t of edges) {
        if (!seen.has(t)) {
          seen.add(t);
          stack.push(t);
        }
      }
    }
    // Once the universal state (the text after a match) is reached, every continuation matches.
    return seen.has(universal) ? [universal] : [...seen].sort((a, b) => a - b);
  };

  const table = new StateTable<{ set: number[]; atStart: boolean }>(limits);
  const { states, queue } = table;
  const idOf = (set: number[], atStart: boolean): number =>
    table.intern(`${atStart ? 'S' : ''}${set.join(',')}`, { set, atStart }, () => closure(set, atStart, true).includes(universal));

  idOf(closure([start], true, false), true);
  for (let id = 0; id < queue.length; id++) {
    const { set } = queue[id]!;
    const moves = set.flatMap((s) => nfa.states[s]!.trans);
    // Split the alphabet at every range boundary; within a piece all characters go alike.
    const cuts = [...new Set(moves.flatMap((m) => m.ranges.flatMap(([a, b]) => [a, b + 1])))].sort((a, b) => a - b);
    const byTarget = new Map<string, { targets: number[]; ranges: Array<[number, number]> }>();
    for (let i = 0; i + 1 < cuts.length; i++) {
      const lo = cuts[i]!;
      const hi = cuts[i + 1]! - 1;
      const targets = moves.filter((m) => m.ranges.some(([a, b]) => a <= lo && lo <= b)).map((m) => m.to);
      if (targets.length === 0) continue;
      const next = closure(targets, false, false);
      const key = next.join(',');
      const entry = byTarget.get(key) ?? { targets: next, ranges: [] };
      entry.ranges.push([lo, hi]);
      byTarget.set(key, entry);
    }
    for (const { targets, ranges } of byTarget.values()) {
      states[id]!.transitions.push({ ranges: normalize(ranges), to: idOf(targets, false) });
    }
  }
  return { states };
}

/** The DFA of the strings both accept. */
export function intersectDfa(a: Dfa, b: Dfa, limits: AutomatonLimits): Dfa {
  const table = new StateTable<[number, number]>(limits);
  const { states, queue } = table;
  const idOf = (p: number, q: number): number => table.intern(`${p},${q}`, [p, q], () => a.states[p]!.accepting && b.states[q]!.accepting);
  idOf(0, 0);
  for (let id = 0; id < queue.length; id++) {
    const [p, q] = queue[id]!;
    for (const tp of a.states[p]!.transitions) {
      for (const tq of b.states[q]!.transitions) {
        const ranges = intersect(tp.ranges, tq.ranges);
        if (ranges.length > 0) states[id]!.transitions.push({ ranges, to: idOf(tp.to, tq.to) });
      }
    }
  }
  return { states };
}

