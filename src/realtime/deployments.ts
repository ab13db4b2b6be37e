// Deployment records: PENDING -> DEPLOYING -> LIVE, or FAILED with the reason. At most one
// deployment per model is LIVE; the one it replaces becomes SUPERSEDED. The decisions that read
// and then write (record a deployment unless one is in progress, make one LIVE unless it was
// failed meanwhile) run in one transaction with the model's row locked, so that replicas on one
// PostgreSQL database take turns on a model; on SQLite write transactions never overlap anyway.
import { sql, type Kysely } from 'kysely';
import { forUpdate, isPostgres } from '../store/dialect.js';
import type { ControlPlaneTables, DeploymentsTable } from '../store/schema.js';
import { notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { InstanceType } from '../native/surface.js';
import type { TrafficConfig } from './traffic.js';

export type DeploymentStatus = 'PENDING' | 'DEPLOYING' | 'LIVE' | 'FAILED' | 'SUPERSEDED';

export type DeploymentAction = 'deploy' | 'undeploy';

export interface DeploymentRecord {
  id: string;
  modelId: string;
  action: DeploymentAction;
  status: DeploymentStatus;
  reason: string | null;
  variationName: string;
  /** The build deployed; null for an undeploy. */
  buildId: string | null;
  /** Where the deployed variation runs; null for an undeploy. */
  instanceType: InstanceType | null;
  traffic: TrafficConfig;
  createdAt: number;
  updatedAt: number;
}

type Row = DeploymentsTable;

type Executor = Kysely<ControlPlaneTables>;

/** What a new deployment is decided from: the model's state as its locked transaction sees it. */
export interface LaunchState {
  live: DeploymentRecord | undefined;
  /** The deployment still on its way (PENDING or DEPLOYING), if any. */
  inProgress: DeploymentRecord | undefined;
  /** Whether an audience among those named to `launch` exists (their rows are locked too). */
  audienceExists: (id: string) => boolean;
}

/** A deployment to record as PENDING. */
export interface NewDeployment {
  action: DeploymentAction;
  variationName: string;
  buildId: string | null;
  instanceType: InstanceType | null;
  traffic: TrafficConfig;
}

const toRecord = (r: Row): DeploymentRecord => ({
  id: r.id,
  modelId: r.model_id,
  action: r.action,
  status: r.status,
  reason: r.reason,
  variationName: r.variation_name,
  buildId: r.build_id,
  instanceType: r.instance_type,
  traffic: JSON.parse(r.traffic) as TrafficConfig,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class DeploymentStore {
  constructor(
    private readonly db: Kysely<ControlPlaneTables>,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Records a PENDING deployment of `modelId` as `decide` makes it from the model's current state,
   * in one transaction that holds the model's row (and the rows of `audienceIds`) locked on
   * PostgreSQL: two replicas deploying one model take turns, and the second sees the first's
   * PENDING deployment; an audience cannot be deleted between the check and the record. `decide`
   * is synchronous and may throw (a refusal), which records nothing.
   */
  async launch(modelId: string, audienceIds: readonly string[], decide: (state: LaunchState) => NewDeployment): Promise<DeploymentRecord> {
    return this.db.transaction().execute(async (trx: Kysely<ControlPlaneTables>) => {
      const model = await forUpdate(trx, trx.selectFrom('models').select('id').where('id', '=', modelId)).executeTakeFirst();
      if (!model) throw notFound(`model "${modelId}" does not exist`, 'model_id');
      const inProgress = await this.inProgress(modelId, trx);
      const live = await this.live(modelId, trx);
      const ids = [...new Set(audienceIds)];
      const existing =
        ids.length === 0 ? [] : await forUpdate(trx, trx.selectFrom('audiences').select('id').where('id', 'in', ids).orderBy('id')).execute();
      const known = new Set(existing.map((a) => a.id));
      const d = decide({ live, inProgress, audienceExists: (id) => known.has(id) });
      const now = this.clock();
      const row: Row = {
        id: newId('dep'),
        model_id: modelId,
        action: d.action,
        status: 'PENDING',
        reason: null,
        variation_name: d.variationName,
        build_id: d.buildId,
        instance_type: d.instanceType,
        traffic: JSON.stringify(d.traffic),
        created_at: now,
        updated_at: now,
      };
      await trx.insertInto('deployments').values(row).execute();
      return toRecord(row);
    });
  }

  async get(id: string): Promise<DeploymentRecord> {
    const row = await this.db.selectFrom('deployments').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw notFound(`deployment "${id}" does not exist`, 'deployment_id');
    return toRecord(row);
  }

  async list(modelId: string): Promise<DeploymentRecord[]> {
    const query = this.db.selectFrom('deployments').selectAll().where('model_id', '=', modelId).orderBy('created_at');
    // In the order recorded: SQLite's rowid; PostgreSQL has none, and the id breaks a tie there.
    const rows = await (isPostgres(this.db) ? query.orderBy('id') : query.orderBy(sql`rowid`)).execute();
    return rows.map(toRecord);
  }

  async live(modelId: string, db: Executor = this.db): Promise<DeploymentRecord | undefined> {
    const row = await db.selectFrom('deployments').selectAll().where('model_id', '=', modelId).where('status', '=', 'LIVE').executeTakeFirst();
    return row && toRecord(row);
  }

  /** The deployment of `modelId` that is still on its way (PENDING or DEPLOYING), if any. */
  async inProgress(modelId: string, db: Executor = this.db): Promise<DeploymentRecord | undefined> {
    const row = await db.selectFrom('deployments').selectAll().where('model_id', '=', modelId).where('status', 'in', ['PENDING', 'DEPLOYING']).executeTakeFirst();
    return row && toRecord(row);
  }

  /** Audience ids that a live or pending deployment routes by; `db` may be the caller's transaction. */
  async audiencesInUse(db: Executor = this.db): Promise<Set<string>> {
    const rows = await db.selectFrom('deployments').select('traffic').where('status', 'in', ['LIVE', 'PENDING', 'DEPLOYING']).execute();
    return new Set(rows.flatMap((r) => (JSON.parse(r.traffic) as TrafficConfig).audiences.map((a) => a.id)));
  }

  async allLive(): Promise<DeploymentRecord[]> {
    const rows = await this.db.selectFrom('deployments').selectAll().where('status', '=', 'LIVE').orderBy('model_id').execute();
    return rows.map(toRecord);
  }

  /** Every LIVE deployment and every one on its way (PENDING or DEPLOYING), oldest first. */
  async current(): Promise<DeploymentRecord[]> {
    const rows = await this.db
      .selectFrom('deployments')
      .selectAll()
      .where('status', 'in', ['LIVE', 'PENDING', 'DEPLOYING'])
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toRecord);
  }

  /**
   * PENDING -> DEPLOYING, or PENDING / DEPLOYING -> FAILED with the reason. False when the
   * deployment was not in a state to move from (already DEPLOYING, or failed by another replica),
   * which is left as it is.
   */
  async setStatus(id: string, status: 'DEPLOYING' | 'FAILED', reason: string | null = null): Promise<boolean> {
    const from: Array<'PENDING' | 'DEPLOYING'> = status === 'DEPLOYING' ? ['PENDING'] : ['PENDING', 'DEPLOYING'];
    const result = await this.db
      .updateTable('deployments')
      .set({ status, reason, updated_at: this.clock() })
      .where('id', '=', id)
      .where('status', 'in', from)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Makes `id` the model's LIVE deployment and supersedes the previous one, atomically, if it is
   * still DEPLOYING (with the model's row locked, so the check holds until the commit). False
   * when it is not: then nothing changes, and the caller must not serve it.
   */
  async goLive(id: string, modelId: string): Promise<boolean> {
    const now = this.clock();
    return this.db.transaction().execute(async (trx: Kysely<ControlPlaneTables>) => {
      await forUpdate(trx, trx.selectFrom('models').select('id').where('id', '=', modelId)).executeTakeFirst();
      // Its own row too: a replica failing it (a build that did not load there) waits, or wins first.
      const current = await forUpdate(trx, trx.selectFrom('deployments').select('status').where('id', '=', id).where('model_id', '=', modelId)).executeTakeFirst();
      if (current?.status !== 'DEPLOYING') return false;
      await trx.updateTable('deployments').set({ status: 'SUPERSEDED', updated_at: now }).where('model_id', '=', modelId).where('status', '=', 'LIVE').execute();
      await trx.updateTable('deployments').set({ status: 'LIVE', reason: null, updated_at: now }).where('id', '=', id).execute();
      return true;
    });
  }
}
