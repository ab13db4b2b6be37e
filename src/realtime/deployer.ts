// Realtime deployments, asynchronously: a deploy or undeploy request is checked against every
// rule (deploy-plan.ts), recorded as PENDING and answered at once; the deployer then loads the
// builds (DEPLOYING), swaps the model's live traffic in one step (LIVE) and lets the previous
// builds go, or records FAILED with the reason. Until the swap the previous deployment keeps
// serving, so a deployment never drops a request, and a refused one changes nothing.
// The check and the record share one transaction that holds the model's row (deployments.launch),
// so two replicas deploying one model at once get one 202 and one 409.
import type { FastifyBaseLogger } from 'fastify';
import { conflict, invalidArgument, notFound } from '../errors.js';
import type { ModelRecord, ModelStore } from '../models/store.js';
import type { AudienceStore } from './audiences.js';
import type { BuildStore } from './builds.js';
import { planDeployment, planUndeploy, type RawAudiences } from './deploy-plan.js';
import type { DeploymentRecord, DeploymentStore, LaunchState, NewDeployment } from './deployments.js';
import type { RealtimeRegistry } from './registry.js';
import type { InstanceType } from '../native/surface.js';
import type { BatchingOverride, TrafficConfig } from './traffic.js';

export interface DeployRequest {
  modelId: string;
  buildId: string;
  variationName?: string;
  /** The deploy file's realtime.audiences, when a file was given. */
  audiences?: RawAudiences;
  batching?: BatchingOverride;
  /** Where the variation runs; default cpu. */
  instanceType?: InstanceType;
}

export interface UndeployRequest {
  modelId: string;
  variationName: string;
  audiences?: RawAudiences;
}

export class Deployer {
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly models: ModelStore,
    private readonly builds: BuildStore,
    private readonly deployments: DeploymentStore,
    private readonly audiences: AudienceStore,
    private readonly registry: RealtimeRegistry,
    private readonly log: FastifyBaseLogger,
    /** Why instance type cuda cannot be used on this host, or null when it can. */
    private readonly cudaUnavailable: () => string | null,
  ) {}

  async deploy(request: DeployRequest): Promise<DeploymentRecord> {
    const model = await this.realtimeModel(request.modelId);
    await this.builds.get(model.id, request.buildId);
    const instanceType = request.instanceType ?? 'cpu';
    // Refused here, before anything is recorded: not a FAILED deployment after the fact.
    if (instanceType === 'cuda') {
      const why = this.cudaUnavailable();
      if (why !== null) throw invalidArgument(`instance type cuda is not available on this host: ${why}`, 'instance_type');
    }
    return this.launch(model.id, audienceIdsOf(request.audiences), ({ live, inProgress, audienceExists }) => {
      refuseIfBusy(model.id, inProgress);
      const { variation, traffic } = planDeployment({
        live: live?.traffic,
        variationName: request.variationName,
        buildId: request.buildId,
        audiences: request.audiences,
        batching: request.batching,
        instanceType,
        audienceExists,
      });
      return { action: 'deploy', variationName: variation, buildId: request.buildId, instanceType, traffic };
    });
  }

  async undeploy(request: UndeployRequest): Promise<DeploymentRecord> {
    const model = await this.realtimeModel(request.modelId);
    return this.launch(model.id, audienceIdsOf(request.audiences), ({ live: current, inProgress, audienceExists }) => {
      refuseIfBusy(model.id, inProgress);
      const live = current?.traffic;
      if (!live || !(request.variationName in live.variations)) {
        throw notFound(`model "${model.id}" has no variation "${request.variationName}"`, 'variation_name');
      }
      const traffic = planUndeploy(live, request.variationName, request.audiences, audienceExists);
      return { action: 'undeploy', variationName: request.variationName, buildId: null, instanceType: null, traffic };
    });
  }

  /**
   * Moves every variation of a live model to `instanceType`, as a deploy of the live traffic with
   * only the instance types changed: the builds load on the new backend while the old ones serve,
   * then traffic swaps in one step (the launch path's (build, instance type) keys). The record
   * names the fallback variation (the one serving requests that match no audience) and its build;
   * its traffic's instanceTypes has every variation on the new type. Asking for the type a model
   * already runs on redeploys it as it is, sharing the loaded builds (as the library does).
   */
  async setInstanceType(modelId: string, instanceType: InstanceType): Promise<DeploymentRecord> {
    const model = await this.realtimeModel(modelId);
    // Refused here, before anything is recorded: not a FAILED deployment after the fact.
    if (instanceType === 'cuda') {
      const why = this.cudaUnavailable();
      if (why !== null) throw invalidArgument(`instance type cuda is not available on this host: ${why}`, 'instance_type');
    }
    return this.launch(model.id, [], ({ live: current, inProgress }) => {
      refuseIfBusy(model.id, inProgress);
      const live = current?.traffic;
      const names = live ? Object.keys(live.variations) : [];
      if (!live || names.length === 0) {
        throw notFound(`model "${model.id}" has no live deployment; deploy a build with "platform models deploy realtime" first`, 'model_id');
      }
      const variation = live.fallbackVariation !== null && live.fallbackVariation in live.variations ? live.fallbackVariation : names[0]!;
      const traffic: TrafficConfig = { ...live, instanceTypes: Object.fromEntries(names.map((v) => [v, instanceType])) };
      return { action: 'deploy', variationName: variation, buildId: live.variations[variation]!, instanceType, traffic };
    });
  }

  /** Loads every model's LIVE deployment; called once on start, before serving. */
  async restore(): Promise<void> {
    const interrupted = await this.deployments.failInterrupted();
    if (interrupted > 0) this.log.warn({ interrupted }, 'deployments interrupted by a restart were marked FAILED');
    for (const dep of await this.deployments.allLive()) {
      try {
        await this.audiences.load(dep.traffic.audiences.map((a) => a.id));
        const variations = await this.registry.acquire(dep.traffic);
        this.registry.setLive(dep.modelId, dep.id, dep.traffic, variations);
      } catch (err) {
        this.log.error({ err, modelId: dep.modelId, deploymentId: dep.id }, 'could not load a live deployment');
      }
    }
  }

  /** Resolves when every deployment started so far has finished (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private async realtimeModel(modelId: string): Promise<ModelRecord> {
    const model = await this.models.get(modelId);
    if (model.kind !== 'realtime') throw invalidArgument(`model "${model.id}" is a library model; deploy it with the library commands`, 'model_id');
    return model;
  }

  /** Records the deployment as `decide` makes it (deployments.launch), then runs it in the background. */
  private async launch(modelId: string, audienceIds: readonly string[], decide: (state: LaunchState) => NewDeployment): Promise<DeploymentRecord> {
    const record = await this.deployments.launch(modelId, audienceIds, decide);
    const task = (async () => {
      // Let the 202 go out before the (synchronous) parse and compile begin.
      await new Promise((resolve) => setImmediate(resolve));
      try {
        // False when another host marked it FAILED (interrupted) meanwhile: leave it so.
        if (!(await this.deployments.setStatus(record.id, 'DEPLOYING'))) return;
        await this.audiences.load(record.traffic.audiences.map((a) => a.id));
        const variations = await this.registry.acquire(record.traffic);
        let live: boolean;
        try {
          live = await this.deployments.goLive(record.id, record.modelId);
        } catch (err) {
          this.registry.discard(record.traffic);
          throw err;
        }
        if (!live) {
          this.registry.discard(record.traffic);
          this.log.warn({ deploymentId: record.id, modelId }, 'deployment no longer DEPLOYING when its builds were loaded; not serving it');
          return;
        }
        this.registry.setLive(record.modelId, record.id, record.traffic, variations);
        this.log.info({ deploymentId: record.id, modelId, action: record.action, variation: record.variationName }, 'deployment live');
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        await this.deployments.setStatus(record.id, 'FAILED', reason).catch((e: unknown) => this.log.error({ err: e, deploymentId: record.id }, 'could not record a failed deployment'));
        this.log.warn({ deploymentId: record.id, modelId, reason }, 'deployment failed');
      }
    })();
    this.running.add(task);
    void task.finally(() => this.running.delete(task));
    return record;
  }
}

function refuseIfBusy(modelId: string, busy: DeploymentRecord | undefined): void {
  if (busy) throw conflict(`model "${modelId}" has deployment ${busy.id} in progress (${busy.status}); wait for it to finish`, 'model_id');
}

/** The audience ids a deploy file's audiences name, for their rows to be read and locked with the model's. */
function audienceIdsOf(raw: RawAudiences | undefined): string[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((a: unknown) => {
    const id = typeof a === 'object' && a !== null ? (a as { id?: unknown }).id : undefined;
    return typeof id === 'string' && id !== '' ? [id] : [];
  });
}
