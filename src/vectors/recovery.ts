// The index worker's start-up: every partition's graph comes back from its checkpoint
// (checkpoint.ts) plus a replay of the rows written after it, or, when there is no checkpoint it
// can trust, is rebuilt from SQLite. SQLite is the store of record; a graph is only ever a copy
// of it that is cheaper to reload than to rebuild. Only the cheap part happens here (the
// committed state, the checkpoint, tombstones for the rows gone since): the points the graph lacks
// are queued as graph work, in sequence order, like any write's, so that the worker answers at
// once and searches scan those points until they are in (Partition.search).
import hnswlib from 'hnswlib-node';
import { findCheckpoint, partitionIdentity, sweepCollectionDir, sweepRoot } from './checkpoint.js';
import { SPACE } from './distance.js';
import { MIN_CAPACITY, newGraph, Partition, type Hnsw } from './partition.js';
import { blobToFloats, collectionFromRow, type CollectionRow, type RecoveryRow } from './rows.js';
import type { VectorStatements } from './tables.js';
import type { CollectionRecord, LogFn, Properties, WorkerSettings } from './types.js';
import { privateDir } from '../store/private-files.js';

/** A collection as the index worker holds it. */
export interface CollectionState {
  record: CollectionRecord;
  partitions: Map<string, Partition>;
  lastSeq: number;
}

export interface Recovery {
  settings: WorkerSettings;
  sql: VectorStatements;
  log: LogFn;
  /** Saves a partition's graph; called for each one that had to replay or rebuild. */
  checkpoint: (p: Partition) => void;
}

/**
 * Loads every collection's partitions into `collections` (checkpoint plus replay, or a rebuild),
 * then removes the index files no checkpoint refers to.
 */
export function recoverCollections(r: Recovery, collections: Map<number, CollectionState>): void {
  privateDir(r.settings.indexDir);
  const rows = r.sql.collections.all() as CollectionRow[];
  for (const row of rows) {
    const state: CollectionState = { record: collectionFromRow(row), partitions: new Map(), lastSeq: row.last_seq };
    collections.set(row.id, state);
    const tenants = r.sql.tenants.all(row.id) as string[];
    for (const tenant of tenants) state.partitions.set(tenant, recoverPartition(r, state.record, tenant));
    sweepCollectionDir(r.settings.indexDir, row.id, tenants);
  }
  sweepRoot(r.settings.indexDir, collections.keys());
}

function recoverPartition(r: Recovery, record: CollectionRecord, tenant: string): Partition {
  const started = performance.now();
  const where = `vector collection "${record.name}"${record.multiTenant ? ` tenant ${JSON.stringify(tenant)}` : ''}`;
  const found = findCheckpoint(r.settings.indexDir, partitionIdentity(record, tenant));
  let reason = found.ok ? '' : found.reason;
  let partition: Partition | undefined;
  let replayed = 0;
  if (found.ok) {
    try {
      const index = new hnswlib.HierarchicalNSW(SPACE[record.metric], record.dimension);
      index.readIndexSync(found.file, true);
      const loaded = fillPartition(r.sql, record, tenant, index, found.meta.seq);
      if (loaded) {
        partition = loaded.partition;
        replayed = loaded.replayed;
      } else reason = 'the index does not match the stored vectors';
    } catch (err) {
      reason = `hnswlib could not read the index file (${(err as Error).message})`;
    }
  }
  const p = partition ?? fillPartition(r.sql, record, tenant, undefined, -1)!.partition;
  const queued = p.pendingPoints;
  // Once the graph holds every row: the log line, and a checkpoint (now, when nothing was queued).
  const finished = () => {
    const ms = Math.round(performance.now() - started);
    if (partition) {
      if (replayed > 0) r.log('info', `${where}: loaded its index checkpoint and replayed ${replayed} newer changes${queued > 0 ? ` (the graph took the ${queued} added points in ${ms} ms)` : ''}`);
    } else if (found.ok || reason !== 'no checkpoint' || p.size > 0) {
      r.log('warn', `${where}: rebuilt its index from ${p.size} stored vectors in ${ms} ms (${reason})`, { collection: record.name, vectors: p.size, ms });
    }
    if (p.dirty > 0) r.checkpoint(p);
  };
  if (p.dirty > 0 || queued > 0) p.unsavedSince = Date.now();
  const last = p.backlog.at(-1);
  if (last) {
    if (!partition && (found.ok || reason !== 'no checkpoint' || p.size > 0)) {
      r.log('warn', `${where}: rebuilding its index from ${p.size} stored vectors in the background (${reason}); searches scan the vectors not in it yet`);
    }
    last.done = finished;
  } else finished();
  return p;
}

/**
 * Builds a partition's committed state from SQLite and brings the graph up to date: with a
 * checkpointed graph, rows newer than `since` are added and labels no longer stored are
 * tombstoned; without one, every row is added. Undefined when the checkpoint disagrees with
 * the rows (a live row it should hold is missing), so the caller rebuilds.
 */
function fillPartition(sql: VectorStatements, record: CollectionRecord, tenant: string, index: Hnsw | undefined, since: number) {
  let graph = index;
  if (!graph) {
    const count = sql.countPartition.get(record.id, tenant) as number;
    graph = newGraph(record.metric, record.dimension, record.hnsw, Math.max(MIN_CAPACITY, Math.ceil(count * 1.1)));
  }
  const p = new Partition(record.id, tenant, record.metric, record.dimension, record.hnsw, graph);
  const inGraph = index ? new Set(index.getIdsList()) : new Set<number>();
  let old = 0;
  // The points the graph lacks (all of them when rebuilding) are queued after the stale labels
  // are tombstoned, so that they can take over those slots.
  const batch: Array<{ label: number; seq: number; values: Float32Array }> = [];
  for (const row of sql.loadPartition.iterate(since, record.id, tenant) as IterableIterator<RecoveryRow>) {
    p.commitPut(row.id, row.label, JSON.parse(row.properties) as Properties);
    if (row.vec) {
      if (inGraph.has(row.label)) return undefined;
      batch.push({ label: row.label, seq: row.seq, values: blobToFloats(row.vec) });
    } else {
      if (!inGraph.has(row.label)) return undefined;
      old++;
    }
  }
  p.indexLive += old;
  let tombstoned = 0;
  for (const label of inGraph) {
    if (label >= p.nextLabel) p.nextLabel = label + 1;
    if (!p.labelToId.has(label)) {
      try {
        graph.markDelete(label);
        tombstoned++;
      } catch {
        // a tombstone already
      }
    }
  }
  // In sequence order, in jobs of a few thousand points: a checkpoint written between two of them
  // (appliedSeq: the last one's highest seq) then holds every row up to that seq.
  batch.sort((a, b) => a.seq - b.seq);
  const dim = record.dimension;
  const queuedAt = Date.now();
  for (let at = 0; at < batch.length; at += REPLAY_JOB_POINTS) {
    const part = batch.slice(at, at + REPLAY_JOB_POINTS);
    const values = new Float32Array(part.length * dim);
    part.forEach((point, i) => values.set(point.values, i * dim));
    p.backlog.push({
      kind: 'apply',
      seq: part[part.length - 1]!.seq,
      deletes: [],
      replaces: 0,
      labels: part.map((point) => point.label),
      rows: part.map((_, i) => i),
      values,
      next: 0,
      deletesDone: true,
      queuedAt,
    });
    p.backlogFloats += values.length;
  }
  p.appliedSeq = Math.max(0, since);
  p.dirty = tombstoned;
  p.index.setEf(record.hnsw.ef);
  return { partition: p, replayed: batch.length + tombstoned };
}

/** Points per queued job of a replay or rebuild. */
const REPLAY_JOB_POINTS = 4096;
