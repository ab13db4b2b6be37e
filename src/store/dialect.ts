// What the stores need to know about the engine under the query builder: row locks exist only on
// PostgreSQL (SQLite has one writer at a time anyway), and the two report a duplicate key
// differently.
import { PostgresAdapter, type Kysely, type SelectQueryBuilder } from 'kysely';

/** Whether `db` runs on PostgreSQL. */
export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * `SELECT ... FOR UPDATE` on PostgreSQL, so that replicas checking and then writing the same rows
 * in their transactions take turns; unchanged on SQLite, whose write transactions never overlap.
 */
export function forUpdate<DB, TB extends keyof DB, O>(db: Kysely<DB>, query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O> {
  return isPostgres(db) ? query.forUpdate() : query;
}

/** Whether an error from either engine is a unique or primary-key violation. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
