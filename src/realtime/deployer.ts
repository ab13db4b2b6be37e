// Realtime deployments, asynchronously: a deploy request is recorded as PENDING and answered at
// once; the deployer then loads the builds (DEPLOYING), swaps the model's live state in one step
// (LIVE) and lets the previous builds go, or records FAILED with the reason. Until the swap the
// previous deployment keeps serving, so a deploy never drops a request.
import type { FastifyBaseLogger } from 'fastify';
import { conflict, invalidArgument } from '../errors.js';
import type { BuildStore } from './builds.js';
import type { DeploymentRecord, DeploymentStore } from './deployments.js';
import type { ModelStore } from './models.js';
import { DEFAULT_VARIATION, variationNameProblem } from './names.js';
import type { RealtimeRegistry } from './registry.js';
import { soleVariation, type TrafficConfig } from './traffic.js';

export interface DeployRequest {
  modelId: string;
  buildId: string;
  variationName?: string;
}

export class Deployer {
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly models: ModelStore,
    private readonly builds: BuildStore,
    private readonly deployments: DeploymentStore,
    private readonly registry: RealtimeRegistry,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Checks the request, records it as PENDING and starts it; returns the record. */
  deploy(request: DeployRequest): DeploymentRecord {
    const model = this.models.get(request.modelId);
    if (model.kind !== 'realtime') throw invalidArgument(`model "${model.id}" is a library model; deploy it with the library commands`, 'model_id');
    this.builds.get(model.id, request.buildId);
    const busy = this.deployments.inProgress(model.id);
    if (busy) throw conflict(`model "${model.id}" has deployment ${busy.id} in progress (${busy.status}); wait for it to finish`, 'model_id');

    const live = this.deployments.live(model.id);
    const existing = live ? Object.keys(live.traffic.variations) : [];
    const variation = request.variationName ?? (existing.length === 1 ? existing[0]! : DEFAULT_VARIATION);
    const problem = variationNameProblem(variation);
    if (problem) throw invalidArgument(`variation name "${variation}" ${problem}`, 'variation_name');

    let traffic: TrafficConfig;
    if (!live) {
      traffic = soleVariation(variation, request.buildId);
    } else if (variation in live.traffic.variations) {
      // Replacing a variation's build keeps every route as it is.
      traffic = { ...live.traffic, variations: { ...live.traffic.variations, [variation]: request.buildId } };
    } else {
      throw invalidArgument(
        `model "${model.id}" already has variation${existing.length > 1 ? 's' : ''} ${existing.map((v) => `"${v}"`).join(', ')}; a new variation needs a deployment file that routes traffic to it (platform models deploy realtime --from-file)`,
        'variation_name',
      );
    }
    const record = this.deployments.create(model.id, variation, request.buildId, traffic);
    this.start(record);
    return record;
  }

  /** Loads every model's LIVE deployment; called once on start, before serving. */
  async restore(): Promise<void> {
    const interrupted = this.deployments.failInterrupted();
    if (interrupted > 0) this.log.warn({ interrupted }, 'deployments interrupted by a restart were marked FAILED');
    for (const dep of this.deployments.allLive()) {
      try {
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

  private start(record: DeploymentRecord): void {
    const task = (async () => {
      // Let the 202 go out before the (synchronous) parse and compile begin.
      await new Promise((resolve) => setImmediate(resolve));
      this.deployments.setStatus(record.id, 'DEPLOYING');
      try {
        const variations = await this.registry.acquire(record.traffic);
        this.deployments.goLive(record.id, record.modelId);
        this.registry.setLive(record.modelId, record.id, record.traffic, variations);
        this.log.info({ deploymentId: record.id, modelId: record.modelId, variation: record.variationName }, 'deployment live');
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        this.deployments.setStatus(record.id, 'FAILED', reason);
        this.log.warn({ deploymentId: record.id, modelId: record.modelId, reason }, 'deployment failed');
      }
    })();
    this.running.add(task);
    void task.finally(() => this.running.delete(task));
  }
}
