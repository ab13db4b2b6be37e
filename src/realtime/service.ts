// The realtime half of the platform, assembled: the control plane (stores, the live registry, the
// deployer) and the predict service with its request log, shadow dispatcher and metrics, built
// once per app and closed with it.
import type { FastifyBaseLogger } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import type { Config } from '../config.js';
import { ModelStore } from '../models/store.js';
import type { Kysely } from 'kysely';
import type { ControlPlaneTables } from '../store/schema.js';
import { AudienceStore } from './audiences.js';
import { BuildStore } from './builds.js';
import { Deployer } from './deployer.js';
import { DeploymentStore } from './deployments.js';
import { createPredictMetrics, type PredictMetrics } from './metrics.js';
import { PredictService } from './predict.js';
import { RealtimeRegistry } from './registry.js';
import { RequestLog } from './request-log.js';
import { ShadowDispatcher } from './shadow.js';

export interface Realtime {
  models: ModelStore;
  builds: BuildStore;
  deployments: DeploymentStore;
  audiences: AudienceStore;
  registry: RealtimeRegistry;
  deployer: Deployer;
  predict: PredictService;
  requestLog: RequestLog;
  shadows: ShadowDispatcher;
  metrics: PredictMetrics;
  close(): Promise<void>;
}

export async function createRealtime(opts: {
  /** The control-plane tables (SQLite or PostgreSQL: src/store/store.ts). */
  db: Kysely<ControlPlaneTables>;
  config: Config;
  clock: () => number;
  metrics: Registry;
  log: FastifyBaseLogger;
  /** Why instance type cuda is unavailable on this host (src/native/cuda-availability.ts), or null. */
  cudaUnavailable: () => string | null;
}): Promise<Realtime> {
  const { db, config, clock } = opts;
  const models = new ModelStore(db, clock);
  const builds = new BuildStore(db, config.dataDir, clock);
  const deployments = new DeploymentStore(db, clock);
  const audiences = new AudienceStore(db, (trx) => deployments.audiencesInUse(trx), clock);
  const metrics = createPredictMetrics(opts.metrics);
  const registry = new RealtimeRegistry(builds, config.batching, (buildId, rows) => metrics.batchRows.observe({ build: buildId }, rows));
  const deployer = new Deployer(models, builds, deployments, audiences, registry, opts.log, opts.cudaUnavailable, config.replica.deployTimeoutMs, clock);
  const requestLog = new RequestLog(config.dataDir, config.requestLogMaxRows);
  const dropped = new Counter({ name: 'shadow_requests_dropped_total', help: 'Shadow copies dropped because the shadow queue was full', registers: [opts.metrics] });
  const shadows = new ShadowDispatcher(config.shadow, () => dropped.inc());
  const predict = new PredictService({ models, deployments, audiences, registry, metrics, requestLog, shadows });
  // The live deployments are loaded by the replica's first snapshot (src/cluster/config-sync.ts).
  return {
    models,
    builds,
    deployments,
    audiences,
    registry,
    deployer,
    predict,
    requestLog,
    shadows,
    metrics,
    async close() {
      while (shadows.pending > 0) await new Promise((resolve) => setTimeout(resolve, 10));
      await registry.close();
      requestLog.close();
    },
  };
}
