// Deployment records: PENDING -> DEPLOYING -> LIVE, or FAILED with the reason. At most one
// deployment per model is LIVE; the one it replaces becomes SUPERSEDED.
import type { Db } from '../store/database.js';
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

interface Row {
  id: string;
  model_id: string;
  action: DeploymentAction;
  status: DeploymentStatus;
  reason: string | null;
  variation_name: string;
  build_id: string | null;
  instance_type: InstanceType | null;
  traffic: string;
  created_at: number;
  updated_at: number;
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
    private readonly db: Db,
    private readonly clock: () => number = Date.now,
  ) {}

  create(
    modelId: string,
    action: DeploymentAction,
    variationName: string,
    buildId: string | null,
    instanceType: InstanceType | null,
    traffic: TrafficConfig,
  ): DeploymentRecord {
    const now = this.clock();
    const id = newId('dep');
    this.db
      .prepare(
        `INSERT INTO deployments (id, model_id, action, status, reason, variation_name, build_id, instance_type, traffic, created_at, updated_at)
         VALUES (?, ?, ?, 'PENDING', NULL, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, modelId, action, variationName, buildId, instanceType, JSON.stringify(traffic), now, now);
    return this.get(id);
  }

  get(id: string): DeploymentRecord {
    const row = this.db.prepare('SELECT * FROM deployments WHERE id = ?').get(id) as Row | undefined;
    if (!row) throw notFound(`deployment "${id}" does not exist`, 'deployment_id');
    return toRecord(row);
  }

  list(modelId: string): DeploymentRecord[] {
    return (this.db.prepare('SELECT * FROM deployments WHERE model_id = ? ORDER BY created_at, rowid').all(modelId) as Row[]).map(toRecord);
  }

  live(modelId: string): DeploymentRecord | undefined {
    const row = this.db.prepare("SELECT * FROM deployments WHERE model_id = ? AND status = 'LIVE'").get(modelId) as Row | undefined;
    return row && toRecord(row);
  }

  /** The deployment of `modelId` that is still on its way (PENDING or DEPLOYING), if any. */
  inProgress(modelId: string): DeploymentRecord | undefined {
    const row = this.db
      .prepare("SELECT * FROM deployments WHERE model_id = ? AND status IN ('PENDING', 'DEPLOYING')")
      .get(modelId) as Row | undefined;
    return row && toRecord(row);
  }

  /** Audience ids that a live or pending deployment routes by. */
  audiencesInUse(): Set<string> {
    const rows = this.db.prepare("SELECT traffic FROM deployments WHERE status IN ('LIVE', 'PENDING', 'DEPLOYING')").pluck().all() as string[];
    return new Set(rows.flatMap((t) => (JSON.parse(t) as TrafficConfig).audiences.map((a) => a.id)));
  }

  allLive(): DeploymentRecord[] {
    return (this.db.prepare("SELECT * FROM deployments WHERE status = 'LIVE' ORDER BY model_id").all() as Row[]).map(toRecord);
  }

  setStatus(id: string, status: 'DEPLOYING' | 'FAILED', reason: string | null = null): void {
    this.db.prepare('UPDATE deployments SET status = ?, reason = ?, updated_at = ? WHERE id = ?').run(status, reason, this.clock(), id);
  }

  /** Makes `id` the model's LIVE deployment and supersedes the previous one, atomically. */
  goLive(id: string, modelId: string): void {
    const now = this.clock();
    this.db.transaction(() => {
      this.db.prepare("UPDATE deployments SET status = 'SUPERSEDED', updated_at = ? WHERE model_id = ? AND status = 'LIVE'").run(now, modelId);
      this.db.prepare("UPDATE deployments SET status = 'LIVE', reason = NULL, updated_at = ? WHERE id = ?").run(now, id);
    })();
  }

  /** Deployments cut short by a restart cannot resume: their loading state was in memory. */
  failInterrupted(): number {
    return this.db
      .prepare("UPDATE deployments SET status = 'FAILED', reason = 'interrupted by a restart of the host', updated_at = ? WHERE status IN ('PENDING', 'DEPLOYING')")
      .run(this.clock()).changes;
  }
}
