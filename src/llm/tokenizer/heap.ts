// A binary heap ordered by a "comes first" predicate: the priority queue of both merge loops
// (highest score first for SentencePiece, lowest rank first for BPE, leftmost on ties). Sifting
// moves a hole instead of swapping pairs; this loop is most of the tokenizer's time.

export class Heap<T> {
  private readonly items: T[] = [];

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  push(item: T): void {
    const a = this.items;
    let i = a.length;
    a.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = a[parent]!;
      if (!this.before(item, p)) break;
      a[i] = p;
      i = parent;
    }
    a[i] = item;
  }

  pop(): T | undefined {
    const a = this.items;
    if (a.length === 0) return undefined;
    const top = a[0]!;
    const last = a.pop()!;
    const n = a.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && this.before(a[child + 1]!, a[child]!)) child++;
        if (!this.before(a[child]!, last)) break;
        a[i] = a[child]!;
        i = child;
      }
      a[i] = last;
    }
    return top;
  }
}
