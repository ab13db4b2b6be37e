// The index worker's connection to the vector tables (src/store/migrations.ts, migration 3) and
// every statement it runs on them. The worker is the tables' only writer; the main thread reads
// them directly (service.ts) for fetches and listings.
import Database from 'better-sqlite3';

/** Opens the worker's own connection: every commit durable (synchronous FULL) before it is answered. */
export function openWorkerDatabase(dbPath: string): Database.Database {
  const db = new Database(dbPath);
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  return db;
}

export function prepareStatements(db: Database.Database) {
  return {
    insertCollection: db.prepare(
      `INSERT INTO vector_collections (name, dimension, metric, description, multi_tenant, hnsw_m, ef_construction, ef_search, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    ),
    /** A collection of the shared store (PostgreSQL) in a replica's cache, under the shared store's id. */
    insertCollectionWithId: db.prepare(
      `INSERT INTO vector_collections (id, name, dimension, metric, description, multi_tenant, hnsw_m, ef_construction, ef_search, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    ),
    /** After rows of the shared store are applied: the sequence number reached, and the count moved. */
    setSeqAndCount: db.prepare('UPDATE vector_collections SET last_seq = ?, vector_count = vector_count + ? WHERE id = ?'),
    collections: db.prepare('SELECT * FROM vector_collections ORDER BY id'),
    tenants: db.prepare('SELECT DISTINCT tenant FROM vectors WHERE collection_id = ?').pluck(),
    countPartition: db.prepare('SELECT count(*) FROM vectors WHERE collection_id = ? AND tenant = ?').pluck(),
    /** A partition's rows (RecoveryRow), with the vector only for rows newer than the given seq. */
    loadPartition: db.prepare(
      `SELECT id, label, seq, properties, CASE WHEN seq > ? THEN vec END AS vec
       FROM vectors WHERE collection_id = ? AND tenant = ?`,
    ),
    upsert: db.prepare(
      `INSERT INTO vectors (collection_id, tenant, id, label, seq, vec, properties) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (collection_id, tenant, id) DO UPDATE
       SET label = excluded.label, seq = excluded.seq, vec = excluded.vec, properties = excluded.properties`,
    ),
    deleteVector: db.prepare('DELETE FROM vectors WHERE collection_id = ? AND tenant = ? AND id = ?'),
    /** After a write: the collection's last sequence number, and its vector count moved by the change. */
    updateSeqAndCount: db.prepare('UPDATE vector_collections SET last_seq = ?, vector_count = vector_count + ? WHERE id = ?'),
    /** A page of a partition's ids in order, after the given one (scroll). */
    idsAfter: db.prepare('SELECT id FROM vectors WHERE collection_id = ? AND tenant = ? AND id > ? ORDER BY id LIMIT ?').pluck(),
    vec: db.prepare('SELECT vec FROM vectors WHERE collection_id = ? AND tenant = ? AND id = ?').pluck(),
    dropVectors: db.prepare('DELETE FROM vectors WHERE collection_id = ?'),
    dropCollection: db.prepare('DELETE FROM vector_collections WHERE id = ?'),
  };
}

export type VectorStatements = ReturnType<typeof prepareStatements>;
