// Random derivations of a byte grammar: each string a sampler could be driven to produce, to check
// that every one is valid (soundness). Alternatives are chosen uniformly; past `maxDepth` nested
// rules only the alternatives that finish soonest (least derivation height) are taken, so every
// sample ends.
import type { Grammar, Sequence } from '../../src/llm/structured/grammar.js';

/** Least derivation height of each rule (Infinity where none is finite). */
function ruleHeights(g: Grammar): number[] {
  const heights = g.rules.map(() => Infinity);
  const seqHeight = (seq: Sequence) => seq.reduce((h, item) => Math.max(h, 'rule' in item ? heights[item.rule]! : 0), 0);
  for (let changed = true; changed; ) {
    changed = false;
    g.rules.forEach((alternatives, r) => {
      const best = 1 + Math.min(...alternatives.map(seqHeight));
      if (best < heights[r]!) {
        heights[r] = best;
        changed = true;
      }
    });
  }
  return heights;
}

export function sampleFromGrammar(g: Grammar, random: () => number, maxDepth = 48): Uint8Array {
  const heights = ruleHeights(g);
  const seqHeight = (seq: Sequence) => seq.reduce((h, item) => Math.max(h, 'rule' in item ? heights[item.rule]! : 0), 0);
  const out: number[] = [];
  const stack: Array<{ item: Sequence[number]; depth: number }> = [{ item: { rule: g.root }, depth: 0 }];
  while (stack.length > 0) {
    const { item, depth } = stack.pop()!;
    if ('bytes' in item) {
      const members: number[] = [];
      for (let byte = 0; byte < 256; byte++) if ((item.bytes[byte >> 5]! >>> (byte & 31)) & 1) members.push(byte);
      out.push(members[Math.floor(random() * members.length)]!);
      continue;
    }
    const alternatives = g.rules[item.rule]!;
    let choices = alternatives.filter((seq) => seqHeight(seq) < Infinity);
    if (depth >= maxDepth) {
      const least = Math.min(...choices.map(seqHeight));
      choices = choices.filter((seq) => seqHeight(seq) === least);
    }
    const chosen = choices[Math.floor(random() * choices.length)]!;
    for (let i = chosen.length - 1; i >= 0; i--) stack.push({ item: chosen[i]!, depth: depth + 1 });
  }
  return Uint8Array.from(out);
}
