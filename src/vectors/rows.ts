// Rows of the vector tables (migration 3) as the main thread and the index worker read them.
import type { CollectionRecord, Metric } from './types.js';

export interface CollectionRow {
  id: number;
  name: string;
  dimension: number;
  metric: Metric;
  description: string;
  multi_tenant: number;
  hnsw_m: number;
  ef_construction: number;
  ef_search: number;
  vector_count: number;
  last_seq: number;
  created_at: number;
}

export function collectionFromRow(r: CollectionRow): CollectionRecord {
  return {
    id: r.id,
    name: r.name,
    dimension: r.dimension,
    metric: r.metric,
    description: r.description,
    multiTenant: r.multi_tenant === 1,
    hnsw: { m: r.hnsw_m, efConstruction: r.ef_construction, ef: r.ef_search },
    vectorCount: r.vector_count,
    createdAt: r.created_at,
  };
}

/** A row of `vectors` as recovery reads it: `vec` only when the checkpoint does not cover the row. */
export interface RecoveryRow {
  id: string;
  label: number;
  seq: number;
  properties: string;
  vec: Buffer | null;
}

/** A float32 blob as a Float32Array of its own (blobs need not be 4-byte aligned). */
export function blobToFloats(blob: Buffer): Float32Array {
  const out = new Float32Array(blob.byteLength / 4);
  new Uint8Array(out.buffer).set(blob);
  return out;
}
