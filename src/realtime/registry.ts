// What is live, in memory: per model, the deployment serving it and one LoadedBuild per
// variation. Builds are shared between variations and deployments and reference-counted by
// (build, instance type), so a redeploy that keeps a build on the same instance type does not
// recompile it, a change of instance type loads a second copy on the new backend while the first
// serves, and a build is freed when nothing uses it.
import { compileTabularModel } from '../tabular/executor/index.js';
import type { BuildStore } from './builds.js';
import type { BatcherOptions } from './batcher.js';
import { LoadedBuild } from './loaded-build.js';
import type { InstanceType } from '../native/surface.js';
import { instanceTypeOf, type TrafficConfig } from './traffic.js';

/** The registry's key for a build compiled for an instance type. */
const loadKey = (buildId: string, instanceType: InstanceType): string => `${buildId}@${instanceType}`;

export interface LiveModel {
  deploymentId: string;
  traffic: TrafficConfig;
  variations: Map<string, LoadedBuild>;
}

export class RealtimeRegistry {
  private readonly live = new Map<string, LiveModel>();
  private readonly loaded = new Map<string, { build: Promise<LoadedBuild>; refs: number }>();

  constructor(
    private readonly builds: BuildStore,
    private readonly batching: BatcherOptions,
    private readonly onBatch?: (buildId: string, rows: number, requests: number) => void,
  ) {}

  get(modelId: string): LiveModel | undefined {
    return this.live.get(modelId);
  }

  /** Loads (or shares) every build the traffic names; on failure releases what it took. */
  async acquire(traffic: TrafficConfig): Promise<Map<string, LoadedBuild>> {
    const taken: string[] = [];
    const variations = new Map<string, LoadedBuild>();
    try {
      for (const [variation, buildId] of Object.entries(traffic.variations)) {
        const type = instanceTypeOf(traffic, variation);
        taken.push(loadKey(buildId, type));
        variations.set(variation, await this.take(buildId, type));
      }
    } catch (err) {
      for (const id of taken) this.release(id);
      throw err;
    }
    return variations;
  }

  /** Swaps the model's live state; the builds the old state held are released. */
  setLive(modelId: string, deploymentId: string, traffic: TrafficConfig, variations: Map<string, LoadedBuild>): void {
    const previous = this.live.get(modelId);
    for (const [variation, build] of variations) {
      const override = traffic.batching?.[variation];
      build.batcher.configure({
        maxBatchRows: override?.max_batch_rows ?? this.batching.maxBatchRows,
        maxWaitMicros: override?.max_wait_micros ?? this.batching.maxWaitMicros,
      });
    }
    if (variations.size === 0) this.live.delete(modelId);
    else this.live.set(modelId, { deploymentId, traffic, variations });
    if (previous) {
      for (const [variation, buildId] of Object.entries(previous.traffic.variations)) this.release(loadKey(buildId, instanceTypeOf(previous.traffic, variation)));
    }
  }

  /** The models served here. */
  modelIds(): string[] {
    return [...this.live.keys()];
  }

  /** The deployment each served model routes by. */
  deploymentIds(): string[] {
    return [...this.live.values()].map((m) => m.deploymentId);
  }

  /** Stops serving a model (its model or deployments are gone), letting its builds go. */
  remove(modelId: string): void {
    const previous = this.live.get(modelId);
    if (!previous) return;
    this.live.delete(modelId);
    for (const [variation, buildId] of Object.entries(previous.traffic.variations)) this.release(loadKey(buildId, instanceTypeOf(previous.traffic, variation)));
  }

  /** Lets go of what `acquire(traffic)` took, when that traffic is not going live after all. */
  discard(traffic: TrafficConfig): void {
    for (const [variation, buildId] of Object.entries(traffic.variations)) this.release(loadKey(buildId, instanceTypeOf(traffic, variation)));
  }

  async close(): Promise<void> {
    const all = [...this.loaded.values()];
    this.loaded.clear();
    this.live.clear();
    await Promise.all(all.map(async (entry) => (await entry.build.catch(() => undefined))?.dispose()));
  }

  private take(buildId: string, instanceType: InstanceType): Promise<LoadedBuild> {
    const key = loadKey(buildId, instanceType);
    const entry = this.loaded.get(key);
    if (entry) {
      entry.refs++;
      return entry.build;
    }
    const build = Promise.resolve().then(async () => {
      const prepared = await this.builds.prepare(buildId);
      // cuda: float Gemm / MatMul on CUDA device 0 for large batches; throws when unavailable.
      const model = compileTabularModel(prepared.model, { device: instanceType });
      return new LoadedBuild(buildId, instanceType, prepared.schema, model, this.batching, (rows, requests) => this.onBatch?.(buildId, rows, requests));
    });
    this.loaded.set(key, { build, refs: 1 });
    // A build that failed to load is forgotten, so that a later deploy tries again.
    build.catch(() => {
      if (this.loaded.get(key)?.build === build) this.loaded.delete(key);
    });
    return build;
  }

  private release(key: string): void {
    const entry = this.loaded.get(key);
    if (!entry) return;
    entry.refs--;
    if (entry.refs > 0) return;
    this.loaded.delete(key);
    void entry.build.then((b) => b.dispose(), () => undefined);
  }
}
