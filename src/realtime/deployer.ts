// Realtime deployments, asynchronously: a deploy or undeploy request is checked against every
// rule (deploy-plan.ts), recorded as PENDING and answered at once. Every replica then loads the
// deployment's builds as it reads the configuration (DEPLOYING; `snapshotPart`), and once every
// live replica has them the deployment goes LIVE (the last one to load makes it so) and each
// replica swaps the model's live traffic in one step and lets the previous builds go; a build
// that cannot load records FAILED with the reason. Until the swap the previous deployment keeps
// serving, so a deployment never drops a request, and a refused one changes nothing. A
// deployment on its way when every replica stopped is carried on by the next to start.
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
import type { LoadedBuild } from './loaded-build.js';
import type { ReplicaRecord } from '../cluster/replicas.js';
import type { InstanceType } from '../native/surface.js';
import { changedProtected, withProtection } from './protection.js';
import { instanceTypeOf, type BatchingOverride, type TrafficConfig } from './traffic.js';

/**
 * Called with the protected variations a deployment would change (never empty), before anything
 * is recorded; it throws to refuse (the caller's role: src/auth/permissions.ts). Without one,
 * protected variations may change.
 */
export type ProtectedGuard = (modelId: string, variations: string[]) => void;

export interface DeployRequest {
  modelId: string;
  buildId: string;
  variationName?: string;
  /** The deploy file's realtime.audiences, when a file was given. */
  audiences?: RawAudiences;
  batching?: BatchingOverride;
  /** Where the variation runs; default cpu. */
  instanceType?: InstanceType;
  /** Protect the deployed variation (true) or lift its protection (false); unchanged when undefined. */
  protect?: boolean;
  guard?: ProtectedGuard;
}

export interface UndeployRequest {
  modelId: string;
  variationName: string;
  audiences?: RawAudiences;
  guard?: ProtectedGuard;
}

export class Deployer {
  /** Called after a change made here, so that this replica reads it at once (ConfigSync.poke). */
  changed: () => void = () => undefined;

  constructor(
    private readonly models: ModelStore,
    private readonly builds: BuildStore,
    private readonly deployments: DeploymentStore,
    private readonly audiences: AudienceStore,
    private readonly registry: RealtimeRegistry,
    private readonly log: FastifyBaseLogger,
    /** Why instance type cuda cannot be used on this host, or null when it can. */
    private readonly cudaUnavailable: () => string | null,
    /** A deployment that some live replica has not loaded this long after it was made is FAILED. */
    private readonly deployTimeoutMs = 600_000,
    private readonly clock: () => number = Date.now,
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
      const planned = planDeployment({
        live: live?.traffic,
        variationName: request.variationName,
        buildId: request.buildId,
        audiences: request.audiences,
        batching: request.batching,
        instanceType,
        audienceExists,
      });
      const { variation } = planned;
      const traffic = withProtection(live?.traffic, planned.traffic, variation, request.protect);
      guardProtected(request.guard, model.id, live?.traffic, traffic);
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
      const traffic = withProtection(live, planUndeploy(live, request.variationName, request.audiences, audienceExists));
      guardProtected(request.guard, model.id, live, traffic);
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
  async setInstanceType(modelId: string, instanceType: InstanceType, guard?: ProtectedGuard): Promise<DeploymentRecord> {
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
      guardProtected(guard, model.id, live, traffic);
      return { action: 'deploy', variationName: variation, buildId: live.variations[variation]!, instanceType, traffic };
    });
  }

  /**
   * Protects a live variation (only maintainers and admins may then change its traffic) or lifts
   * its protection, as a deployment of the live traffic with only the protected list changed: the
   * loaded builds are shared, and the change reaches every replica as any deployment does.
   */
  async setProtection(modelId: string, variation: string, protect: boolean): Promise<DeploymentRecord> {
    const model = await this.realtimeModel(modelId);
    return this.launch(model.id, [], ({ live: current, inProgress }) => {
      refuseIfBusy(model.id, inProgress);
      const live = current?.traffic;
      if (!live || !(variation in live.variations)) throw notFound(`model "${model.id}" has no variation "${variation}"`, 'variation_name');
      const traffic = withProtection(live, live, variation, protect);
      return { action: 'deploy', variationName: variation, buildId: live.variations[variation]!, instanceType: instanceTypeOf(live, variation), traffic };
    });
  }

  /** Deployments on their way whose builds this replica has loaded, by deployment id. */
  private readonly prepared = new Map<string, { traffic: TrafficConfig; variations: Map<string, LoadedBuild> }>();
  /** In-progress deployments seen at the last read; the timer reads again while there are some. */
  private inProgress: DeploymentRecord[] = [];
  /** LIVE deployments that failed to load here: when to try again, and the wait after that. */
  private readonly retries = new Map<string, { at: number; waitMs: number }>();

  /**
   * Realtime routing as a part of the replica's snapshot (src/cluster/config-sync.ts): serve each
   * model's LIVE deployment (swapping in the builds prepared for it, or loading them), drop
   * models with none, and load the builds of every deployment on its way, so that it can go LIVE
   * once every live replica has them. A build that cannot load on this replica fails the
   * deployment for all, with the reason.
   */
  readonly snapshotPart = {
    name: 'realtime',
    apply: () => this.apply(),
    advance: (live: ReplicaRecord[]) => this.advance(live),
    // Also while a LIVE deployment failed to load here: the timer tries it again, backing off.
    waiting: () => this.inProgress.length > 0 || this.retries.size > 0,
  };

  /** What this replica serves and has prepared, for its row in `replicas`. */
  load(): { serving: string[]; prepared: string[] } {
    return { serving: this.registry.deploymentIds(), prepared: [...this.prepared.keys()] };
  }

  private async apply(): Promise<void> {
    const current = await this.deployments.current();
    const live = current.filter((d) => d.status === 'LIVE');
    this.inProgress = current.filter((d) => d.status === 'PENDING' || d.status === 'DEPLOYING');
    for (const id of this.retries.keys()) if (!live.some((d) => d.id === id)) this.retries.delete(id);
    for (const dep of live) {
      if (this.registry.get(dep.modelId)?.deploymentId === dep.id) continue;
      const retry = this.retries.get(dep.id);
      if (retry && Date.now() < retry.at) continue;
      try {
        await this.audiences.load(dep.traffic.audiences.map((a) => a.id));
        const ready = this.prepared.get(dep.id);
        this.prepared.delete(dep.id);
        const variations = ready?.variations ?? (await this.registry.acquire(dep.traffic));
        this.registry.setLive(dep.modelId, dep.id, dep.traffic, variations);
        this.retries.delete(dep.id);
        this.log.info({ deploymentId: dep.id, modelId: dep.modelId, action: dep.action, variation: dep.variationName }, 'deployment live');
      } catch (err) {
        // The previous state keeps serving; tried again after 1 s, 2 s, ... up to a minute.
        const waitMs = Math.min((retry?.waitMs ?? 500) * 2, 60_000);
        this.retries.set(dep.id, { at: Date.now() + waitMs, waitMs });
        this.log.error({ err, modelId: dep.modelId, deploymentId: dep.id, retryInMs: waitMs }, 'could not load a live deployment');
      }
    }
    const liveModels = new Set(live.map((d) => d.modelId));
    for (const modelId of this.registry.modelIds()) if (!liveModels.has(modelId)) this.registry.remove(modelId);
    for (const dep of this.inProgress) {
      if (this.prepared.has(dep.id)) continue;
      try {
        await this.deployments.setStatus(dep.id, 'DEPLOYING');
        await this.audiences.load(dep.traffic.audiences.map((a) => a.id));
        this.prepared.set(dep.id, { traffic: dep.traffic, variations: await this.registry.acquire(dep.traffic) });
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        await this.deployments.setStatus(dep.id, 'FAILED', reason).catch((e: unknown) => this.log.error({ err: e, deploymentId: dep.id }, 'could not record a failed deployment'));
        this.log.warn({ deploymentId: dep.id, modelId: dep.modelId, reason }, 'deployment failed');
      }
    }
    // Prepared for a deployment that failed or was superseded meanwhile: let the builds go.
    const waiting = new Set(this.inProgress.map((d) => d.id));
    for (const [id, ready] of this.prepared) {
      if (waiting.has(id)) continue;
      this.prepared.delete(id);
      this.registry.discard(ready.traffic);
    }
  }

  /**
   * Makes LIVE each deployment that every live replica has prepared; fails one that some live
   * replica has not prepared within the deploy timeout (a replica that heartbeats but cannot load,
   * or is stuck), naming them. True when the configuration changed.
   */
  private async advance(live: ReplicaRecord[]): Promise<boolean> {
    let changed = false;
    for (const dep of this.inProgress) {
      const missing = live.filter((r) => !r.loaded.prepared.includes(dep.id)).map((r) => r.id);
      if (missing.length > 0 && this.clock() - dep.createdAt > this.deployTimeoutMs) {
        const reason = `not loaded on replica${missing.length === 1 ? '' : 's'} ${missing.join(', ')} within ${this.deployTimeoutMs / 1000} s (DEPLOY_TIMEOUT_SECONDS)`;
        if (await this.deployments.setStatus(dep.id, 'FAILED', reason)) {
          this.log.warn({ deploymentId: dep.id, modelId: dep.modelId, missing }, 'deployment timed out');
          changed = true;
        }
        continue;
      }
      if (!this.prepared.has(dep.id) || missing.length > 0) continue;
      if (await this.deployments.goLive(dep.id, dep.modelId)) changed = true;
    }
    return changed;
  }

    private async realtimeModel(modelId: string): Promise<ModelRecord> {
    const model = await this.models.get(modelId);
    if (model.kind !== 'realtime') throw invalidArgument(`model "${model.id}" is a library model; deploy it with the library commands`, 'model_id');
    return model;
  }

  /** Records the deployment as `decide` makes it (deployments.launch); the snapshot's reads carry it out. */
  private async launch(modelId: string, audienceIds: readonly string[], decide: (state: LaunchState) => NewDeployment): Promise<DeploymentRecord> {
    const record = await this.deployments.launch(modelId, audienceIds, decide);
    this.changed();
    return record;
  }
}

function guardProtected(guard: ProtectedGuard | undefined, modelId: string, live: TrafficConfig | undefined, next: TrafficConfig): void {
  const changed = changedProtected(live, next);
  if (guard && changed.length > 0) guard(modelId, changed);
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
