// A replica's cache of the shared vector store (PostgreSQL): the vector tables of the one-box store
// (migration 3) in a SQLite file of its own, with the index checkpoints beside it, under
// DATA_DIR/vector-cache/<identity of the database>/. A cache made from another database (a
// DATA_DIR reused against a new DATABASE_URL) is never mistaken for this one's: it is removed.
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { openDatabase, type Db } from '../store/database.js';
import { migrations } from '../store/migrations.js';
import type { SharedVectorLog } from './shared-log.js';
import { privateDir } from '../store/private-files.js';

const VECTOR_TABLES = migrations.filter((m) => m.name === 'vector_store');

export interface VectorCache {
  db: Db;
  /** Where the cache lives: the service's data directory (index files under `vectors/`). */
  dir: string;
}

export async function openVectorCache(dataDir: string, log: SharedVectorLog, logger: FastifyBaseLogger): Promise<VectorCache> {
  const identity = await log.identity();
  const root = path.join(dataDir, 'vector-cache');
  privateDir(dataDir);
  privateDir(root);
  for (const entry of fs.readdirSync(root)) {
    if (entry === identity) continue;
    logger.info({ dir: path.join(root, entry) }, 'removing a vector cache made from another database');
    fs.rmSync(path.join(root, entry), { recursive: true, force: true });
  }
  const dir = path.join(root, identity);
  // The one-box store's file settings (WAL, synchronous FULL), with only the vector tables.
  const db = openDatabase(dir, VECTOR_TABLES, 'cache.db');
  return { db, dir };
}
