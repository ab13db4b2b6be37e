// The replicas of the host on one database, as the `replicas` table records them: each one's
// address, state, heartbeat, the configuration version it has applied, and what it has loaded.
// A replica is live while its heartbeat (the database's clock, so that the replicas' own clocks
// may disagree) is recent and it has not said it is draining or gone. Deployments wait for the
// live replicas only: one that died stops counting once its heartbeat is older than the timeout.
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { isPostgres } from '../store/dialect.js';
import type { ControlPlaneTables, ReplicasTable } from '../store/schema.js';

/** What a replica has loaded, as it reports it. */
export interface ReplicaLoad {
  /** Realtime deployments it routes by (the LIVE one of each model, as it holds it). */
  serving: string[];
  /** Realtime deployments on their way whose builds it has loaded, ready to swap in. */
  prepared: string[];
  /** Library models loaded and serving here, as "<model id>@<instance type>/<threads or all>". */
  library: string[];
  /** On PostgreSQL: its copy of each vector collection, the change applied and the newest seen. */
  vectors?: Array<{ name: string; applied: number; head: number }>;
}

export interface ReplicaRecord {
  id: string;
  address: string;
  state: ReplicasTable['state'];
  startedAt: number;
  heartbeatAt: number;
  appliedVersion: number;
  loaded: ReplicaLoad;
}

/** A library model loaded on a replica, as ReplicaLoad.library lists it. */
export const libraryLoadId = (modelId: string, instanceType: string, threads: number | null): string => `${modelId}@${instanceType}/${threads ?? 'all'}`;

/** Whether a replica's load has `modelId` loaded, on whatever instance. */
export const holdsLibraryModel = (load: ReplicaLoad, modelId: string): boolean => load.library.some((m) => m.startsWith(`${modelId}@`));

/** "applied on 2/3 replicas": of the live replicas, how many have it. */
export interface ReplicaCount {
  applied: number;
  total: number;
}

/** A replica silent for this long is forgotten when another starts. */
const FORGET_AFTER_MS = 60 * 60 * 1000;

export const EMPTY_LOAD: ReplicaLoad = { serving: [], prepared: [], library: [] };

/** The database's clock in unix milliseconds, on either engine. */
export function databaseNow(db: Kysely<ControlPlaneTables>): RawBuilder<number> {
  return isPostgres(db)
    ? sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`
    : sql<number>`CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)`;
}

function parseLoad(text: string): ReplicaLoad {
  try {
    const v = JSON.parse(text) as Partial<ReplicaLoad>;
    return { serving: v.serving ?? [], prepared: v.prepared ?? [], library: v.library ?? [], ...(v.vectors ? { vectors: v.vectors } : {}) };
  } catch {
    return EMPTY_LOAD;
  }
}

const toRecord = (r: ReplicasTable): ReplicaRecord => ({
  id: r.id,
  address: r.address,
  state: r.state,
  startedAt: r.started_at,
  heartbeatAt: r.heartbeat_at,
  appliedVersion: r.applied_version,
  loaded: parseLoad(r.loaded),
});

export class ReplicaDirectory {
  constructor(
    private readonly db: Kysely<ControlPlaneTables>,
    /** This replica. */
    readonly self: { readonly id: string; address: string },
    /** A replica whose heartbeat is older than this is not counted as live. */
    readonly timeoutMs: number,
  ) {}

  /**
   * Records this replica as starting, replacing the row a previous run under the same id left,
   * and forgets replicas silent for an hour (each restart without REPLICA_ID leaves a row).
   */
  async register(): Promise<void> {
    await this.db.deleteFrom('replicas').where('heartbeat_at', '<', sql<number>`${databaseNow(this.db)} - ${FORGET_AFTER_MS}`).execute();
    const now = databaseNow(this.db);
    const row = { id: this.self.id, address: this.self.address, state: 'starting' as const, applied_version: 0, loaded: JSON.stringify(EMPTY_LOAD) };
    await this.db
      .insertInto('replicas')
      .values({ ...row, started_at: now, heartbeat_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ ...row, started_at: now, heartbeat_at: now }))
      .execute();
  }

  /** The address, once known (a host listening on port 0 learns its port only then). */
  async setAddress(address: string): Promise<void> {
    this.self.address = address;
    await this.db.updateTable('replicas').set({ address }).where('id', '=', this.self.id).execute();
  }

  /** The heartbeat, with whatever else changed. */
  async report(update: { state?: ReplicasTable['state']; appliedVersion?: number; loaded?: ReplicaLoad }): Promise<void> {
    await this.db
      .updateTable('replicas')
      .set({
        heartbeat_at: databaseNow(this.db),
        ...(update.state ? { state: update.state } : {}),
        ...(update.appliedVersion !== undefined ? { applied_version: update.appliedVersion } : {}),
        ...(update.loaded ? { loaded: JSON.stringify(update.loaded) } : {}),
      })
      .where('id', '=', this.self.id)
      .execute();
  }

  /** Every replica the table knows, live or not, by id, with the database's clock now. */
  async all(): Promise<{ replicas: ReplicaRecord[]; now: number }> {
    const rows = await this.db.selectFrom('replicas').selectAll().select(databaseNow(this.db).as('now')).orderBy('id').execute();
    const now = Number(rows[0]?.now ?? 0);
    return { replicas: rows.map((r) => toRecord(r)), now };
  }

  /** Whether `r` counts as live at `now` (the database's clock): what `live()` selects. */
  isLive(r: ReplicaRecord, now: number): boolean {
    return (r.state === 'starting' || r.state === 'serving') && r.heartbeatAt >= now - this.timeoutMs;
  }

  /** How many of the live replicas have applied something (`match` on what each reports loaded). */
  async appliedOn(match: (load: ReplicaLoad) => boolean): Promise<ReplicaCount> {
    const live = await this.live();
    return { applied: live.filter((r) => match(r.loaded)).length, total: live.length };
  }

  /** The replicas that count: starting or serving, with a heartbeat within the timeout. */
  async live(): Promise<ReplicaRecord[]> {
    return liveOf(await this.reachable());
  }

  /** The replicas with a heartbeat within the timeout, draining ones included (they still serve). */
  async reachable(): Promise<ReplicaRecord[]> {
    const rows = await this.db
      .selectFrom('replicas')
      .selectAll()
      .where('state', 'in', ['starting', 'serving', 'draining'])
      .where('heartbeat_at', '>=', sql<number>`${databaseNow(this.db)} - ${this.timeoutMs}`)
      .orderBy('id')
      .execute();
    return rows.map(toRecord);
  }
}

/** Of the reachable replicas, those that count for deployments: not draining. */
export const liveOf = (reachable: readonly ReplicaRecord[]): ReplicaRecord[] => reachable.filter((r) => r.state === 'starting' || r.state === 'serving');
