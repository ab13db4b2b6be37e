// Index checkpoints on disk, one pair of files per partition in <DATA_DIR>/vectors/<collection id>/:
//
//   p-<hash of tenant>.<seq>.<stamp>.hnsw   hnswlib's own file format
//   p-<hash of tenant>.meta.json            which file, the sequence number it covers, its size and CRC-32
//
// Each is written to a temporary file, fsynced and renamed, the index file first; the meta file
// is the commit point, and the previous index file is removed only after it. A checkpoint whose
// file is missing, has the wrong size or CRC, or was made for other parameters is not loaded (so
// a damaged file never reaches hnswlib's reader): the partition is rebuilt from SQLite instead.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Hnsw } from './partition.js';
import type { CollectionRecord, HnswParams, Metric } from './types.js';
import { privateDir, privateFile } from '../store/private-files.js';

export const CHECKPOINT_FORMAT = 1;

export interface CheckpointMeta {
  format: number;
  collectionId: number;
  tenant: string;
  metric: Metric;
  dimension: number;
  m: number;
  efConstruction: number;
  /** Every write of this partition with a sequence number up to this one is in the index. */
  seq: number;
  file: string;
  bytes: number;
  crc32: number;
  savedAt: number;
}

export interface PartitionIdentity {
  collectionId: number;
  tenant: string;
  metric: Metric;
  dimension: number;
  hnsw: HnswParams;
}

export function partitionIdentity(record: CollectionRecord, tenant: string): PartitionIdentity {
  return { collectionId: record.id, tenant, metric: record.metric, dimension: record.dimension, hnsw: record.hnsw };
}

/** The meta fields that must match the partition for its checkpoint to be loaded. */
function identityMeta(id: PartitionIdentity): Pick<CheckpointMeta, 'format' | 'collectionId' | 'tenant' | 'metric' | 'dimension' | 'm' | 'efConstruction'> {
  return {
    format: CHECKPOINT_FORMAT,
    collectionId: id.collectionId,
    tenant: id.tenant,
    metric: id.metric,
    dimension: id.dimension,
    m: id.hnsw.m,
    efConstruction: id.hnsw.efConstruction,
  };
}

export const collectionDir = (root: string, collectionId: number) => path.join(root, String(collectionId));

export function partitionBase(tenant: string): string {
  return `p-${crypto.createHash('sha256').update(tenant, 'utf8').digest('hex').slice(0, 32)}`;
}

const metaName = (tenant: string) => `${partitionBase(tenant)}.meta.json`;

function fsyncPath(p: string, flags = 'r'): void {
  const fd = fs.openSync(p, flags);
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function fileCrc32(file: string): { bytes: number; crc32: number } {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(8 * 1024 * 1024);
    let crc = 0;
    let bytes = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      crc = zlib.crc32(buf.subarray(0, n), crc);
      bytes += n;
    }
    return { bytes, crc32: crc };
  } finally {
    fs.closeSync(fd);
  }
}

/** Writes the partition's index as its new checkpoint, atomically. */
export function writeCheckpoint(root: string, id: PartitionIdentity, index: Hnsw, seq: number): CheckpointMeta {
  const dir = collectionDir(root, id.collectionId);
  privateDir(dir);
  const base = partitionBase(id.tenant);
  const file = `${base}.${seq}.${Date.now().toString(36)}${crypto.randomBytes(3).toString('hex')}.hnsw`;
  const tmp = path.join(dir, `${file}.tmp`);
  index.writeIndexSync(tmp);
  privateFile(tmp); // hnswlib creates it with the umask's mode
  const { bytes, crc32 } = fileCrc32(tmp);
  if (bytes === 0) throw new Error(`hnswlib wrote an empty index file (${tmp})`);
  fsyncPath(tmp, 'r+');
  fs.renameSync(tmp, path.join(dir, file));

  const previous = readMetaFile(dir, id.tenant);
  const meta: CheckpointMeta = {
    ...identityMeta(id),
    seq,
    file,
    bytes,
    crc32,
    savedAt: Date.now(),
  };
  const metaPath = path.join(dir, metaName(id.tenant));
  const metaTmp = `${metaPath}.tmp`;
  fs.writeFileSync(metaTmp, JSON.stringify(meta), { mode: 0o600 });
  privateFile(metaTmp);
  fsyncPath(metaTmp, 'r+');
  fs.renameSync(metaTmp, metaPath);
  fsyncPath(dir);
  if (previous && previous.file !== file) fs.rmSync(path.join(dir, previous.file), { force: true });
  return meta;
}

function readMetaFile(dir: string, tenant: string): CheckpointMeta | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, metaName(tenant)), 'utf8')) as CheckpointMeta;
  } catch {
    return undefined;
  }
}

export type CheckpointCheck = { ok: true; meta: CheckpointMeta; file: string } | { ok: false; reason: string };

/** Finds a partition's checkpoint and checks that it can be loaded, without loading it. */
export function findCheckpoint(root: string, id: PartitionIdentity): CheckpointCheck {
  const dir = collectionDir(root, id.collectionId);
  const metaPath = path.join(dir, metaName(id.tenant));
  if (!fs.existsSync(metaPath)) return { ok: false, reason: 'no checkpoint' };
  const meta = readMetaFile(dir, id.tenant);
  if (!meta || typeof meta !== 'object') return { ok: false, reason: 'the checkpoint description is unreadable' };
  for (const [k, v] of Object.entries(identityMeta(id))) {
    if (meta[k as keyof CheckpointMeta] !== v) return { ok: false, reason: `the checkpoint was made with another ${k}` };
  }
  if (typeof meta.file !== 'string' || meta.file.includes('/') || !Number.isInteger(meta.seq)) {
    return { ok: false, reason: 'the checkpoint description is unreadable' };
  }
  const file = path.join(dir, meta.file);
  if (!fs.existsSync(file)) return { ok: false, reason: 'the index file is missing' };
  const { bytes, crc32 } = fileCrc32(file);
  if (bytes !== meta.bytes || crc32 !== meta.crc32) return { ok: false, reason: 'the index file is damaged (size or CRC-32 differs)' };
  return { ok: true, meta, file };
}

/** Removes a partition's checkpoint files (its last vector was deleted). */
export function removeCheckpoint(root: string, collectionId: number, tenant: string): void {
  const dir = collectionDir(root, collectionId);
  const base = partitionBase(tenant);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) if (name.startsWith(`${base}.`)) fs.rmSync(path.join(dir, name), { force: true });
}

/**
 * Removes what no checkpoint refers to: temporary files of an interrupted checkpoint, index
 * files a newer checkpoint replaced, and the files of partitions that no longer exist.
 */
export function sweepCollectionDir(root: string, collectionId: number, liveTenants: Iterable<string>): void {
  const dir = collectionDir(root, collectionId);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  const keep = new Set<string>();
  for (const tenant of liveTenants) {
    const meta = readMetaFile(dir, tenant);
    keep.add(metaName(tenant));
    if (meta && typeof meta.file === 'string') keep.add(meta.file);
  }
  for (const name of names) if (!keep.has(name)) fs.rmSync(path.join(dir, name), { force: true, recursive: true });
}

/** Removes the directories of collections that no longer exist. */
export function sweepRoot(root: string, liveCollectionIds: Iterable<number>): void {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return;
  }
  const keep = new Set([...liveCollectionIds].map(String));
  for (const name of names) if (!keep.has(name)) fs.rmSync(path.join(root, name), { recursive: true, force: true });
}
