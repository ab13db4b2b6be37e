// One tenant's vectors in one collection (a plain collection has one partition, tenant ''): the
// committed state that SQLite holds (id <-> label, properties, the live labels for sampling) and
// the hnswlib graph that follows it, possibly a few queued changes behind.
//
// Ids map to integer labels that are never reused while the graph may hold them: an upsert of an
// existing id takes a new label and tombstones the old one (markDelete); the new point then
// takes over a tombstoned slot (allowReplaceDeleted), so replacing does not grow the graph.
// Tombstones left by deletes are counted and removed by a compaction, which rebuilds the graph
// from the live points in slices while the old graph keeps serving.
import hnswlib from 'hnswlib-node';
import { compileFilter, type Predicate } from './filter.js';
import { exactDistance, fromSpace, normalized, SPACE } from './distance.js';
import type { Filter, HnswParams, Metric, Properties } from './types.js';

export type Hnsw = InstanceType<typeof hnswlib.HierarchicalNSW>;

export const MIN_CAPACITY = 1024;

/** A batch of graph changes from one committed write, applied in order. */
export interface ApplyJob {
  kind: 'apply';
  /** Highest sequence number among the batch's rows for this partition (0 for a delete). */
  seq: number;
  /** Labels to tombstone (replaced or deleted ids). */
  deletes: number[];
  /** New points: labels[i] has values rows[i] of `values` (dimension floats each). */
  labels: number[];
  rows: number[];
  values: Float32Array;
  /** Next point to add. */
  next: number;
  deletesDone: boolean;
  /** When the write was committed (Date.now()), for the checkpoint age. */
  queuedAt: number;
}

/** A read that must see every change queued before it. */
export interface ReadJob {
  kind: 'read';
  run: () => void;
  /** Called instead of run when the partition goes away first (its collection was deleted). */
  fail: (err: Error) => void;
}

export type Job = ApplyJob | ReadJob;

interface Compaction {
  next: Hnsw;
  capacity: number;
  labels: number[];
  pos: number;
}

export function newGraph(metric: Metric, dimension: number, hnsw: HnswParams, capacity: number): Hnsw {
  const index = new hnswlib.HierarchicalNSW(SPACE[metric], dimension);
  index.initIndex({ maxElements: capacity, m: hnsw.m, efConstruction: hnsw.efConstruction, randomSeed: 100, allowReplaceDeleted: true });
  index.setEf(hnsw.ef);
  return index;
}

export class Partition {
  // Committed state: exactly what SQLite holds.
  readonly idToLabel = new Map<string, number>();
  readonly labelToId = new Map<number, string>();
  readonly props = new Map<number, Properties>();
  private readonly live: number[] = [];
  private readonly livePos = new Map<number, number>();
  nextLabel = 0;

  // The graph.
  index: Hnsw;
  /** Labels live in the graph (the committed count once the backlog is applied). */
  indexLive = 0;
  /** Every change up to this sequence number is in the graph. */
  appliedSeq = 0;
  /** Graph changes since the last checkpoint. */
  dirty = 0;
  /** Since when (Date.now()) a committed change has been missing from the checkpoint; undefined while none is. */
  unsavedSince: number | undefined;
  readonly backlog: Job[] = [];
  /** Floats waiting in the backlog, for back-pressure. */
  backlogFloats = 0;
  compaction: Compaction | undefined;
  idleTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly collectionId: number,
    readonly tenant: string,
    readonly metric: Metric,
    readonly dimension: number,
    readonly hnsw: HnswParams,
    index?: Hnsw,
  ) {
    this.index = index ?? newGraph(metric, dimension, hnsw, MIN_CAPACITY);
  }

  get size(): number {
    return this.live.length;
  }

  get tombstones(): number {
    return this.index.getCurrentCount() - this.indexLive;
  }

  // ---- committed state ----

  commitPut(id: string, label: number, properties: Properties): void {
    const old = this.idToLabel.get(id);
    if (old !== undefined) this.forget(old);
    this.idToLabel.set(id, label);
    this.labelToId.set(label, id);
    this.props.set(label, properties);
    this.livePos.set(label, this.live.length);
    this.live.push(label);
    if (label >= this.nextLabel) this.nextLabel = label + 1;
  }

  commitDelete(id: string): number | undefined {
    const label = this.idToLabel.get(id);
    if (label === undefined) return undefined;
    this.idToLabel.delete(id);
    this.forget(label);
    return label;
  }

  private forget(label: number): void {
    this.labelToId.delete(label);
    this.props.delete(label);
    const pos = this.livePos.get(label)!;
    const last = this.live.pop()!;
    if (last !== label) {
      this.live[pos] = last;
      this.livePos.set(last, pos);
    }
    this.livePos.delete(label);
  }

  /** The live labels whose properties match (count, delete by filter). */
  labelsWhere(match: Predicate): number[] {
    const out: number[] = [];
    for (const label of this.live) if (match(this.props.get(label)!)) out.push(label);
    return out;
  }

  /** Up to `count` distinct live labels, uniformly at random. */
  sampleLabels(count: number, random: () => number = Math.random): number[] {
    const n = this.live.length;
    if (count >= n) {
      const all = this.live.slice();
      for (let i = all.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [all[i], all[j]] = [all[j]!, all[i]!];
      }
      return all;
    }
    // Floyd's algorithm: `count` distinct positions in O(count).
    const chosen = new Set<number>();
    for (let j = n - count; j < n; j++) {
      const t = Math.floor(random() * (j + 1));
      chosen.add(chosen.has(t) ? j : t);
    }
    return [...chosen].map((pos) => this.live[pos]!);
  }

  // ---- the graph ----

  private ensureRoom(index: Hnsw, extra: number): void {
    const free = index.getMaxElements() - index.getCurrentCount();
    // A tombstone is taken over by the next add, so only adds beyond them need new slots.
    const tombstones = index === this.index ? this.tombstones : 0;
    if (free + tombstones >= extra) return;
    let capacity = Math.max(MIN_CAPACITY, index.getMaxElements());
    while (capacity - index.getCurrentCount() + tombstones < extra) capacity *= 2;
    index.resizeIndex(capacity);
  }

  private markDeleted(index: Hnsw, label: number): boolean {
    try {
      index.markDelete(label);
      return true;
    } catch {
      return false; // not in this graph, or already a tombstone
    }
  }

  /**
   * Applies part of the backlog's first job, for at most `budgetMs`; returns true when the job
   * is done and has been removed.
   */
  applySlice(job: ApplyJob, budgetMs: number): boolean {
    const started = performance.now();
    if (!job.deletesDone) {
      for (const label of job.deletes) {
        if (this.markDeleted(this.index, label)) {
          this.indexLive--;
          this.dirty++;
        }
        if (this.compaction) this.markDeleted(this.compaction.next, label);
      }
      job.deletesDone = true;
    }
    const dim = this.dimension;
    const remaining = job.labels.length - job.next;
    if (remaining > 0) {
      this.ensureRoom(this.index, remaining);
      if (this.compaction) this.ensureRoom(this.compaction.next, remaining);
    }
    while (job.next < job.labels.length) {
      const row = job.rows[job.next]!;
      const label = job.labels[job.next]!;
      const point = Array.from(job.values.subarray(row * dim, row * dim + dim));
      this.index.addPoint(point, label, true);
      if (this.compaction) this.compaction.next.addPoint(point, label, true);
      this.indexLive++;
      this.dirty++;
      this.backlogFloats -= dim;
      job.next++;
      if ((job.next & 7) === 0 && performance.now() - started > budgetMs) return false;
    }
    if (job.seq > this.appliedSeq) this.appliedSeq = job.seq;
    return true;
  }

  /** Adds points straight into the graph (loading), growing it once for all of them. */
  bulkAdd(points: Array<{ label: number; values: Float32Array }>): void {
    this.ensureRoom(this.index, points.length);
    for (const p of points) {
      this.index.addPoint(Array.from(p.values), p.label, true);
      this.indexLive++;
    }
  }

  needsCompaction(minTombstones: number): boolean {
    const t = this.tombstones;
    return this.compaction === undefined && t >= minTombstones && t >= 0.2 * this.index.getCurrentCount();
  }

  startCompaction(): void {
    const labels = this.live.slice(); // the backlog is empty: committed == graph
    const capacity = Math.max(MIN_CAPACITY, Math.ceil(labels.length * 1.25));
    this.compaction = { next: newGraph(this.metric, this.dimension, this.hnsw, capacity), capacity, labels, pos: 0 };
  }

  /** Copies live points into the new graph for at most `budgetMs`; swaps graphs at the end. */
  compactSlice(budgetMs: number): boolean {
    const c = this.compaction!;
    const started = performance.now();
    this.ensureRoom(c.next, c.labels.length - c.pos);
    while (c.pos < c.labels.length) {
      const label = c.labels[c.pos++]!;
      let point: number[];
      try {
        point = this.index.getPoint(label);
      } catch {
        continue; // deleted since the compaction began
      }
      c.next.addPoint(point, label, true);
      if ((c.pos & 7) === 0 && performance.now() - started > budgetMs) return false;
    }
    this.index = c.next;
    this.index.setEf(this.hnsw.ef);
    this.compaction = undefined;
    this.dirty++;
    return true;
  }

  // ---- reads (run with an empty backlog) ----

  /** The k nearest live points, ascending by distance (ours), optionally filtered. */
  search(
    query: Float32Array,
    k: number,
    filter: Filter | undefined,
    exactScanMax: number,
  ): { labels: number[]; distances: number[]; strategy: 'graph' | 'filtered-graph' | 'exact' | 'empty' } {
    const empty = { labels: [], distances: [], strategy: 'empty' as const };
    if (this.indexLive === 0) return empty;
    const point = Array.from(query);
    if (filter === undefined) {
      const want = Math.min(k, this.indexLive);
      const found = this.graphSearch(point, want, this.hnsw.ef);
      if (found.labels.length >= want) return { ...found, strategy: 'graph' };
      return { ...this.exact(query, this.live, k), strategy: 'exact' };
    }
    const match = compileFilter(filter);
    const allowed: number[] = [];
    for (const label of this.live) if (match(this.props.get(label)!)) allowed.push(label);
    if (allowed.length === 0) return empty;
    if (allowed.length <= exactScanMax) return { ...this.exact(query, allowed, k), strategy: 'exact' };
    // Selective enough that the graph must look further for `k` matches: raise ef with the
    // inverse of the fraction that matches (up to 8x).
    const want = Math.min(k, allowed.length);
    const widen = Math.min(8, this.live.length / allowed.length);
    const ef = Math.ceil(Math.max(this.hnsw.ef, want) * widen);
    const set = new Set(allowed);
    const found = this.graphSearch(point, want, ef, (label) => set.has(label));
    if (found.labels.length >= want) return { ...found, strategy: 'filtered-graph' };
    return { ...this.exact(query, allowed, k), strategy: 'exact' };
  }

  private graphSearch(point: number[], k: number, ef: number, filter?: (label: number) => boolean) {
    if (ef !== this.hnsw.ef) this.index.setEf(ef);
    try {
      const res = filter ? this.index.searchKnn(point, k, filter) : this.index.searchKnn(point, k);
      return { labels: res.neighbors, distances: res.distances.map((d) => fromSpace(this.metric, d)) };
    } finally {
      if (ef !== this.hnsw.ef) this.index.setEf(this.hnsw.ef);
    }
  }

  /** Exact k nearest among `labels`, from the graph's stored points. */
  private exact(query: Float32Array, labels: readonly number[], k: number): { labels: number[]; distances: number[] } {
    // hnswlib holds cosine points at unit length; the query is brought to it too.
    const q = this.metric === 'cosine' ? normalized(query) : query;
    const scored: Array<{ label: number; d: number }> = [];
    for (const label of labels) {
      let p: number[];
      try {
        p = this.index.getPoint(label);
      } catch {
        continue;
      }
      scored.push({ label, d: exactDistance(this.metric, q, p) });
    }
    scored.sort((a, b) => a.d - b.d);
    const top = scored.slice(0, k);
    return { labels: top.map((s) => s.label), distances: top.map((s) => s.d) };
  }
}
