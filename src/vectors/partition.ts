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

/** A batch of graph changes from one committed write (or, at start-up, rows to replay), applied in order. */
export interface ApplyJob {
  kind: 'apply';
  /** Highest sequence number among the batch's rows for this partition (0 for a delete). */
  seq: number;
  /** Labels to tombstone (replaced or deleted ids). */
  deletes: number[];
  /** How many of `deletes` are the old labels of ids this job puts again (a replacement is one change, not two). */
  replaces: number;
  /** New points: labels[i] has values rows[i] of `values` (dimension floats each). */
  labels: number[];
  rows: number[];
  values: Float32Array;
  /** Next point to add. */
  next: number;
  deletesDone: boolean;
  /** When the write was committed (Date.now()), for the checkpoint age. */
  queuedAt: number;
  /** Called once the job is in the graph (recovery: the replay or rebuild is complete). */
  done?: () => void;
  /** Cosine: the job's points as hnswlib stores them (unit length), made by the first search that scans them. */
  stored?: Float32Array;
}

export type Job = ApplyJob;

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
  /** Measured cost of one graph insert (seconds, moving average), for the backlog's drain time; undefined until measured. */
  insertSeconds: number | undefined;
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
    const first = job.next;
    const measure = () => {
      const added = job.next - first;
      if (added === 0) return;
      const sample = (performance.now() - started) / 1000 / added;
      this.insertSeconds = this.insertSeconds === undefined ? sample : 0.8 * this.insertSeconds + 0.2 * sample;
    };
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
      if ((job.next & 7) === 0 && performance.now() - started > budgetMs) {
        measure();
        return false;
      }
    }
    measure();
    if (job.seq > this.appliedSeq) this.appliedSeq = job.seq;
    return true;
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

  // ---- the backlog ----

  /** Committed changes not yet in the graph: points to add, and deletes (a replacement counts once). */
  get pendingChanges(): number {
    let n = 0;
    for (const j of this.backlog) n += j.labels.length - j.next + (j.deletesDone ? 0 : j.deletes.length - j.replaces);
    return n;
  }

  /** Points queued for the graph (what its drain time is counted in). */
  get pendingPoints(): number {
    let n = 0;
    for (const j of this.backlog) n += j.labels.length - j.next;
    return n;
  }

  /**
   * The committed vectors not yet in the graph, by label, as hnswlib will store them (unit length
   * for cosine): the points of the queued jobs still to be added, less those a later job replaced
   * or deleted.
   */
  unindexed(): Map<number, Float32Array> {
    const out = new Map<number, Float32Array>();
    const dim = this.dimension;
    for (const job of this.backlog) {
      if (job.next >= job.labels.length) continue;
      let stored: Float32Array = job.values;
      if (this.metric === 'cosine') {
        if (!job.stored) {
          job.stored = new Float32Array(job.labels.length * dim);
          for (let i = 0; i < job.labels.length; i++) {
            const row = job.rows[i]!;
            job.stored.set(normalized(job.values.subarray(row * dim, row * dim + dim)), i * dim);
          }
        }
        stored = job.stored;
      }
      for (let i = job.next; i < job.labels.length; i++) {
        const label = job.labels[i]!;
        if (!this.labelToId.has(label)) continue; // replaced or deleted since
        const at = (job.stored ? i : job.rows[i]!) * dim;
        out.set(label, stored.subarray(at, at + dim));
      }
    }
    return out;
  }

  // ---- reads ----

  /**
   * The k nearest live points, ascending by distance (ours), optionally filtered. It never waits
   * for the backlog: the graph answers for the points it holds (less those that queued jobs
   * replace or delete), the points still queued are scanned exactly, and the two lists are merged
   * by distance, computed alike (distance.ts). `unindexed` is how many queued points there were.
   */
  search(
    query: Float32Array,
    k: number,
    filter: Filter | undefined,
    exactScanMax: number,
  ): { labels: number[]; distances: number[]; strategy: 'graph' | 'filtered-graph' | 'exact' | 'empty'; unindexed: number } {
    if (this.size === 0) return { labels: [], distances: [], strategy: 'empty', unindexed: 0 };
    const pending = this.backlog.length > 0 ? this.unindexed() : new Map<number, Float32Array>();
    const unindexed = pending.size;
    // hnswlib holds cosine points at unit length; the query is brought to it too (for the scans).
    const q = this.metric === 'cosine' ? normalized(query) : query;
    const point = Array.from(query);
    let allowed: readonly number[] = this.live;
    let strategy: 'graph' | 'filtered-graph' = 'graph';
    let graphFilter: ((label: number) => boolean) | undefined;
    let ef = this.hnsw.ef;
    if (filter !== undefined) {
      const match = compileFilter(filter);
      const matching: number[] = [];
      for (const label of this.live) if (match(this.props.get(label)!)) matching.push(label);
      if (matching.length === 0) return { labels: [], distances: [], strategy: 'empty', unindexed };
      if (matching.length <= exactScanMax) return { ...this.exact(q, matching, k, pending), strategy: 'exact', unindexed };
      allowed = matching;
      strategy = 'filtered-graph';
      const set = new Set(matching);
      graphFilter = (label) => set.has(label);
      // Selective enough that the graph must look further for `k` matches: raise ef with the
      // inverse of the fraction that matches (up to 8x).
      const widen = Math.min(8, this.live.length / matching.length);
      ef = Math.ceil(Math.max(this.hnsw.ef, Math.min(k, matching.length)) * widen);
    } else if (this.backlog.some((j) => !j.deletesDone && j.deletes.length > 0)) {
      // The graph still holds points that queued jobs replace or delete: only current ones count.
      graphFilter = (label) => this.labelToId.has(label);
    }
    let inGraph = allowed.length;
    const queued: number[] = [];
    if (unindexed > 0) {
      for (const label of allowed) if (pending.has(label)) queued.push(label);
      inGraph -= queued.length;
    }
    const want = Math.min(k, inGraph);
    let found: { labels: number[]; distances: number[] } = { labels: [], distances: [] };
    if (want > 0) {
      found = this.graphSearch(point, want, ef, graphFilter);
      if (found.labels.length < want) return { ...this.exact(q, allowed, k, pending), strategy: 'exact', unindexed };
    }
    if (queued.length === 0) return { ...found, strategy, unindexed };
    return { ...merge(found, this.exact(q, queued, k, pending), k), strategy, unindexed };
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

  /** Exact k nearest among `labels`: queued points from `pending`, the others from the graph's stored points. */
  private exact(q: Float32Array, labels: readonly number[], k: number, pending: Map<number, Float32Array>): { labels: number[]; distances: number[] } {
    const scored: Array<{ label: number; d: number }> = [];
    for (const label of labels) {
      let p: ArrayLike<number> | undefined = pending.get(label);
      if (!p) {
        try {
          p = this.index.getPoint(label);
        } catch {
          continue;
        }
      }
      scored.push({ label, d: exactDistance(this.metric, q, p) });
    }
    scored.sort((a, b) => a.d - b.d);
    const top = scored.slice(0, k);
    return { labels: top.map((s) => s.label), distances: top.map((s) => s.d) };
  }
}

/** The k nearest of two ascending lists (the graph's first on a tie). */
function merge(a: { labels: number[]; distances: number[] }, b: { labels: number[]; distances: number[] }, k: number) {
  const labels: number[] = [];
  const distances: number[] = [];
  let i = 0;
  let j = 0;
  while (labels.length < k && (i < a.labels.length || j < b.labels.length)) {
    if (j >= b.labels.length || (i < a.labels.length && a.distances[i]! <= b.distances[j]!)) {
      labels.push(a.labels[i]!);
      distances.push(a.distances[i++]!);
    } else {
      labels.push(b.labels[j]!);
      distances.push(b.distances[j++]!);
    }
  }
  return { labels, distances };
}
