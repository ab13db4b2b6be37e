// The vector store of record when the replicas share PostgreSQL (migration 11): collections, and
// the current state of every vector with a tombstone for each deleted one, numbered by a
// per-collection sequence. Every write takes its collection's row lock to number its changes, so
// changes commit in sequence order: a replica that has read every row up to n and then reads
// "seq > n" can never miss a change that commits later with a smaller number. Each write ends with
// a pg_notify on VECTORS_CHANNEL (delivered at commit) naming the collection, so that replicas
// pull at once; they poll the heads as well, since a notification can be lost.
import { sql, type Kysely, type Transaction } from 'kysely';
import { conflict, invalidArgument, notFound } from '../errors.js';
import type { ControlPlaneTables } from '../store/schema.js';
import { collectionFromRow, type CollectionRow } from './rows.js';
import type { CollectionRecord, ImportBatch, NewCollection, UpsertBatch, VectorKey } from './types.js';

export const VECTORS_CHANNEL = 'platform_vectors';

/** Rows and bytes of vectors written by one statement: a bind message must stay under PostgreSQL's 1 GB. */
const ROWS_PER_STATEMENT = 4096;
const BYTES_PER_STATEMENT = 32 * 1024 * 1024;

/** One row past a replica's sequence number: a vector, or a tombstone (vec and properties null). */
export interface LogRow {
  tenant: string;
  id: string;
  seq: number;
  vec: Buffer | null;
  /** JSON text. */
  properties: string | null;
}

export interface LogPage {
  /** The collection's sequence number in the same snapshot as the rows. */
  head: number;
  /** Tombstones up to this sequence number are gone: a copy behind it must start again. */
  purged: number;
  rows: LogRow[];
}

type Db = Kysely<ControlPlaneTables>;

export class SharedVectorLog {
  constructor(private readonly db: Db) {}

  /** The database's identity: a replica's cache made from another database is not reused. */
  async identity(): Promise<string> {
    const { rows } = await sql<{ token: string }>`SELECT token FROM vector_store_identity WHERE id = 1`.execute(this.db);
    return rows[0]!.token;
  }

  async collections(): Promise<CollectionRecord[]> {
    const { rows } = await sql<CollectionRow>`SELECT * FROM vector_collections ORDER BY name`.execute(this.db);
    return rows.map(collectionFromRow);
  }

  async collection(name: string): Promise<CollectionRecord | undefined> {
    const { rows } = await sql<CollectionRow>`SELECT * FROM vector_collections WHERE name = ${name}`.execute(this.db);
    return rows[0] ? collectionFromRow(rows[0]) : undefined;
  }

  /** Every collection's sequence number (id -> last_seq). */
  async heads(): Promise<Map<number, number>> {
    const { rows } = await sql<{ id: number; last_seq: number }>`SELECT id, last_seq FROM vector_collections`.execute(this.db);
    return new Map(rows.map((r) => [r.id, r.last_seq]));
  }

  /** The collection's sequence number now; undefined once it is deleted. */
  async head(collectionId: number): Promise<number | undefined> {
    const { rows } = await sql<{ last_seq: number }>`SELECT last_seq FROM vector_collections WHERE id = ${collectionId}`.execute(this.db);
    return rows[0]?.last_seq;
  }

  async createCollection(spec: NewCollection, now: number): Promise<CollectionRecord> {
    return collectionFromRow(await this.insertCollection(this.db, spec, now));
  }

  async dropCollection(collectionId: number): Promise<boolean> {
    const res = await sql`DELETE FROM vector_collections WHERE id = ${collectionId}`.execute(this.db);
    return Number(res.numAffectedRows ?? 0) > 0;
  }

  /** An upsert, all or nothing: answers the sequence number it committed at. */
  async upsert(batch: UpsertBatch, dimension: number): Promise<{ seq: number }> {
    refuseNul(batch, (i) => `vector[${i}]`);
    return this.db.transaction().execute(async (trx) => {
      const seq = await lockCollection(trx, batch.collectionId);
      return { seq: (await writeVectors(trx, batch.collectionId, seq, batch, dimension)).last };
    });
  }

  /** Deletes the ids that exist, leaving a tombstone for each: answers how many, and the sequence number. */
  /**
   * `asOf`: only rows not written since that sequence number (a delete by filter read the matching
   * ids in a copy at asOf; a vector replaced since may no longer match, and is kept).
   */
  async delete(collectionId: number, keys: VectorKey[], asOf = Number.MAX_SAFE_INTEGER): Promise<{ deleted: number; seq: number }> {
    const unique = new Map<string, VectorKey>();
    for (const k of keys) unique.set(`${k.tenant}\u0000${k.id}`, k);
    const list = [...unique.values()].filter((k) => !k.tenant.includes('\u0000') && !k.id.includes('\u0000'));
    return this.db.transaction().execute(async (trx) => {
      let seq = await lockCollection(trx, collectionId);
      let deleted = 0;
      let last = seq;
      for (let at = 0; at < list.length; at += ROWS_PER_STATEMENT) {
        const part = list.slice(at, at + ROWS_PER_STATEMENT);
        // The tombstones, the collection's new head and count, and the notification: one round trip
        // while the collection's lock is held.
        const { rows } = await sql<{ n: number }>`
          WITH gone AS (
            UPDATE vectors SET seq = ${seq} + t.ord, vec = NULL, properties = NULL, deleted_at = ${Date.now()}
            FROM unnest(${part.map((k) => k.tenant)}::text[], ${part.map((k) => k.id)}::text[]) WITH ORDINALITY AS t(tenant, id, ord)
            WHERE vectors.collection_id = ${collectionId} AND vectors.tenant = t.tenant AND vectors.id = t.id AND vectors.vec IS NOT NULL
              AND vectors.seq <= ${asOf}
            RETURNING 1
          ),
          counted AS (SELECT count(*)::int AS n FROM gone),
          moved AS (
            UPDATE vector_collections SET last_seq = ${seq + part.length}, vector_count = vector_count - (SELECT n FROM counted)
            WHERE id = ${collectionId} AND (SELECT n FROM counted) > 0
            RETURNING 1
          )
          SELECT n, CASE WHEN n > 0 THEN pg_notify(${VECTORS_CHANNEL}, ${String(collectionId)}) END AS notified, (SELECT count(*) FROM moved) AS moved
          FROM counted`.execute(trx);
        const n = rows[0]!.n;
        deleted += n;
        if (n > 0) last = seq + part.length;
        seq += part.length;
      }
      return { deleted, seq: last };
    });
  }

  /** A collection and all its vectors in one transaction (an import). */
  async importCollection(batch: ImportBatch, now: number): Promise<CollectionRecord> {
    // The file's first line is the header, so vector i is on line i + 2.
    refuseNul(batch, (i) => `line ${i + 2}`);
    return this.db.transaction().execute(async (trx) => {
      const row = await this.insertCollection(trx, batch.collection, now);
      const { added } = await writeVectors(trx, row.id, 0, batch, row.dimension);
      return { ...collectionFromRow(row), vectorCount: added };
    });
  }

  /**
   * Up to `limit` rows of the collection past `after`, in sequence order, with its head in the same
   * snapshot (one statement). Undefined when the collection no longer exists.
   */
  async pull(collectionId: number, after: number, limit: number): Promise<LogPage | undefined> {
    const { rows } = await sql<{
      head: number;
      purged: number;
      tenant: string | null;
      id: string | null;
      seq: number | null;
      vec: Buffer | null;
      properties: string | null;
    }>`
      SELECT c.last_seq AS head, c.purged_seq AS purged, v.tenant, v.id, v.seq, v.vec, v.properties::text AS properties
      FROM vector_collections c
      LEFT JOIN LATERAL (
        SELECT tenant, id, seq, vec, properties FROM vectors
        WHERE collection_id = c.id AND seq > ${after} ORDER BY seq LIMIT ${limit}
      ) v ON true
      WHERE c.id = ${collectionId}
      ORDER BY v.seq`.execute(this.db);
    if (rows.length === 0) return undefined;
    const { head, purged } = rows[0]!;
    if (rows[0]!.seq === null) return { head, purged, rows: [] };
    return { head, purged, rows: rows.map((r) => ({ tenant: r.tenant!, id: r.id!, seq: r.seq!, vec: r.vec, properties: r.properties })) };
  }

  /**
   * Removes the tombstones older than `cutoff` (unix ms), recording per collection the newest one
   * removed: a replica's copy behind it cannot learn of those deletes and copies the collection
   * again. Safe to run from every replica at once.
   */
  async purgeTombstones(cutoff: number): Promise<number> {
    const { rows: due } = await sql<{ collection_id: number }>`
      SELECT DISTINCT collection_id FROM vectors WHERE vec IS NULL AND deleted_at < ${cutoff}`.execute(this.db);
    let purged = 0;
    for (const { collection_id: id } of due) {
      // The collection's row lock first, as every write takes it, so that the two cannot deadlock.
      purged += await this.db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ last_seq: number }>`SELECT last_seq FROM vector_collections WHERE id = ${id} FOR UPDATE`.execute(trx);
        if (!rows[0]) return 0;
        const { rows: gone } = await sql<{ n: number; newest: number | null }>`
          WITH gone AS (DELETE FROM vectors WHERE collection_id = ${id} AND vec IS NULL AND deleted_at < ${cutoff} RETURNING seq)
          SELECT count(*)::int AS n, max(seq) AS newest FROM gone`.execute(trx);
        const { n, newest } = gone[0]!;
        if (newest !== null) await sql`UPDATE vector_collections SET purged_seq = GREATEST(purged_seq, ${newest}) WHERE id = ${id}`.execute(trx);
        return n;
      });
    }
    return purged;
  }

  private async insertCollection(db: Db | Transaction<ControlPlaneTables>, spec: NewCollection, now: number): Promise<CollectionRow> {
    try {
      const { rows } = await sql<CollectionRow>`
        INSERT INTO vector_collections (name, dimension, metric, description, multi_tenant, hnsw_m, ef_construction, ef_search, created_at)
        VALUES (${spec.name}, ${spec.dimension}, ${spec.metric}, ${spec.description}, ${spec.multiTenant ? 1 : 0},
                ${spec.hnsw.m}, ${spec.hnsw.efConstruction}, ${spec.hnsw.ef}, ${now})
        RETURNING *`.execute(db);
      return rows[0]!;
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw conflict(`a vector collection named "${spec.name}" already exists`, 'name');
      throw err;
    }
  }
}

/** Takes the collection's row lock (held to the commit) and answers its sequence number. */
async function lockCollection(trx: Transaction<ControlPlaneTables>, collectionId: number): Promise<number> {
  const { rows } = await sql<{ last_seq: number }>`SELECT last_seq FROM vector_collections WHERE id = ${collectionId} FOR UPDATE`.execute(trx);
  if (!rows[0]) throw notFound('the vector collection was deleted while this request was on its way', 'collection_name');
  return rows[0].last_seq;
}

/**
 * Writes a batch's vectors numbered from `seq` + 1 (a key given twice keeps its last values, as
 * in the one-box store): answers the last number and how many keys were not live before.
 */
async function writeVectors(trx: Transaction<ControlPlaneTables>, collectionId: number, seq: number, batch: Omit<UpsertBatch, 'collectionId'>, dimension: number) {
  const last = new Map<string, number>();
  for (let i = 0; i < batch.ids.length; i++) last.set(`${batch.tenants[i]}\u0000${batch.ids[i]}`, i);
  const order = [...last.values()].sort((a, b) => a - b);
  const rowBytes = dimension * 4;
  const perStatement = Math.max(1, Math.min(ROWS_PER_STATEMENT, Math.floor(BYTES_PER_STATEMENT / rowBytes)));
  const all = Buffer.from(batch.values.buffer, batch.values.byteOffset, batch.values.byteLength);
  let added = 0;
  for (let at = 0; at < order.length; at += perStatement) {
    const part = order.slice(at, at + perStatement);
    const tenants = part.map((i) => batch.tenants[i]!);
    const ids = part.map((i) => batch.ids[i]!);
    const props = part.map((i) => JSON.stringify(batch.properties[i] ?? {}));
    // The rows' values as one binary parameter, each row cut out of it by its position.
    const vecs = Buffer.concat(part.map((i) => all.subarray(i * rowBytes, (i + 1) * rowBytes)));
    // How many were live before, the rows, the collection's new head and count, and the
    // notification (sent at commit): one statement, one round trip while the lock is held. Every
    // part of the WITH sees the rows as they were before the statement, so `prior` counts what was
    // live before this write.
    const { rows } = await sql<{ prior: number }>`
      WITH input AS (
        SELECT t.tenant, t.id, t.props, t.ord
        FROM unnest(${tenants}::text[], ${ids}::text[], ${props}::text[]) WITH ORDINALITY AS t(tenant, id, props, ord)
      ),
      prior AS (
        SELECT count(*)::int AS n FROM vectors v JOIN input i ON v.tenant = i.tenant AND v.id = i.id
        WHERE v.collection_id = ${collectionId} AND v.vec IS NOT NULL
      ),
      written AS (
        INSERT INTO vectors (collection_id, tenant, id, seq, vec, properties)
        SELECT ${collectionId}, i.tenant, i.id, ${seq} + i.ord,
               substring(${vecs}::bytea FROM ((i.ord - 1) * ${rowBytes} + 1)::int FOR ${rowBytes}), i.props::jsonb
        FROM input i
        ON CONFLICT (collection_id, tenant, id) DO UPDATE
        SET seq = excluded.seq, vec = excluded.vec, properties = excluded.properties, deleted_at = NULL
        RETURNING 1
      ),
      moved AS (
        UPDATE vector_collections SET last_seq = ${seq + part.length}, vector_count = vector_count + ${part.length} - (SELECT n FROM prior)
        WHERE id = ${collectionId}
        RETURNING 1
      )
      SELECT (SELECT n FROM prior) AS prior, (SELECT count(*) FROM written) AS written, (SELECT count(*) FROM moved) AS moved,
             pg_notify(${VECTORS_CHANNEL}, ${String(collectionId)}) AS notified`.execute(trx);
    added += part.length - rows[0]!.prior;
    seq += part.length;
  }
  return { last: seq, added };
}


/** PostgreSQL's text and jsonb cannot hold the character U+0000, which the one-box store accepts. */
function refuseNul(batch: Omit<UpsertBatch, 'collectionId'>, where: (i: number) => string): void {
  for (let i = 0; i < batch.ids.length; i++) {
    const at = where(i);
    if (batch.ids[i]!.includes('\u0000')) throw invalidArgument(`${at}: a vector id cannot contain the character U+0000 on a PostgreSQL deployment`, `${at}.id`);
    if (batch.tenants[i]!.includes('\u0000')) throw invalidArgument(`${at}: a tenant id cannot contain the character U+0000 on a PostgreSQL deployment`, `${at}.tenant_id`);
    if (JSON.stringify(batch.properties[i] ?? {}).includes('\\u0000')) {
      throw invalidArgument(`${at}: properties cannot contain the character U+0000 on a PostgreSQL deployment`, `${at}.properties`);
    }
  }
}
