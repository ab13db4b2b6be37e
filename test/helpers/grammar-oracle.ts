// An independent reference for the native grammar matcher: an Earley recognizer over bytes that
// says, after a prefix, whether the grammar can still match (some parse is alive) and whether it
// can end there. Feeding is incremental, and try() tests a continuation without keeping it, so a
// test can compute the exact set of tokens a grammar allows at each step.
import type { Grammar } from '../../src/llm/structured/grammar.js';

interface Item {
  rule: number;
  alt: number;
  dot: number;
  origin: number;
}

export class GrammarOracle {
  private readonly sets: Array<Map<string, Item>> = [];

  constructor(private readonly g: Grammar) {
    const first = new Map<string, Item>();
    this.sets.push(first);
    g.rules[g.root]!.forEach((_, alt) => this.add(first, { rule: g.root, alt, dot: 0, origin: 0 }));
    this.close(0);
  }

  /** Some parse is alive after the bytes fed so far. */
  get alive(): boolean {
    return this.sets[this.sets.length - 1]!.size > 0;
  }

  /** The bytes fed so far are a whole sentence. */
  get complete(): boolean {
    const last = this.sets[this.sets.length - 1]!;
    for (const it of last.values()) {
      if (it.rule === this.g.root && it.origin === 0 && it.dot === this.g.rules[it.rule]![it.alt]!.length) return true;
    }
    return false;
  }

  feed(bytes: Uint8Array): boolean {
    for (const b of bytes) {
      const next = new Map<string, Item>();
      for (const it of this.sets[this.sets.length - 1]!.values()) {
        const item = this.g.rules[it.rule]![it.alt]![it.dot];
        if (item && 'bytes' in item && (item.bytes[b >> 5]! >>> (b & 31)) & 1) this.add(next, { ...it, dot: it.dot + 1 });
      }
      this.sets.push(next);
      this.close(this.sets.length - 1);
      if (next.size === 0) return false;
    }
    return true;
  }

  /** What feeding `bytes` would give, without feeding them. */
  try(bytes: Uint8Array): { alive: boolean; complete: boolean } {
    const n = this.sets.length;
    const alive = this.feed(bytes);
    const result = { alive, complete: alive && this.complete };
    this.sets.length = n;
    return result;
  }

  private add(set: Map<string, Item>, it: Item): boolean {
    const key = `${it.rule},${it.alt},${it.dot},${it.origin}`;
    if (set.has(key)) return false;
    set.set(key, it);
    return true;
  }

  private close(k: number): void {
    const set = this.sets[k]!;
    const queue = [...set.values()];
    while (queue.length > 0) {
      const it = queue.pop()!;
      const seq = this.g.rules[it.rule]![it.alt]!;
      if (it.dot === seq.length) {
        for (const parent of [...this.sets[it.origin]!.values()]) {
          const next = this.g.rules[parent.rule]![parent.alt]![parent.dot];
          if (next && 'rule' in next && next.rule === it.rule) {
            const adv = { ...parent, dot: parent.dot + 1 };
            if (this.add(set, adv)) queue.push(adv);
          }
        }
        continue;
      }
      const item = seq[it.dot]!;
      if (!('rule' in item)) continue;
      this.g.rules[item.rule]!.forEach((_, alt) => {
        const pred = { rule: item.rule, alt, dot: 0, origin: k };
        if (this.add(set, pred)) queue.push(pred);
      });
      // A rule already completed here (nullable): step over it.
      for (const done of [...set.values()]) {
        if (done.rule === item.rule && done.origin === k && done.dot === this.g.rules[done.rule]![done.alt]!.length) {
          const adv = { ...it, dot: it.dot + 1 };
          if (this.add(set, adv)) queue.push(adv);
        }
      }
    }
  }
}
