// Library deployments: a GGUF file from MODELS_DIR loaded under a model id in the project
// `library`. Loading is asynchronous (PENDING -> DEPLOYING -> LIVE, or FAILED with the reason);
// changing the instance type loads a second instance, switches new requests to it when it is
// ready, and unloads the first once its requests have finished; undeploying frees the memory.
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../store/database.js';
import { conflict, invalidArgument, notFound, unavailable } from '../../errors.js';
import type { ModelStore } from '../../models/store.js';
import { LIBRARY_PROJECT } from '../../models/names.js';
import { findInCatalog, listCatalog } from './catalog.js';
import type { InstanceType } from '../../native/surface.js';
import { LlmInstance, ModelFileMissingError, type InstanceOptions } from './instance.js';

export type LibraryStatus = 'PENDING' | 'DEPLOYING' | 'LIVE' | 'FAILED';

/**
 * What kind of failure a FAILED deployment had: a `missing_file` one is tried again at start-up
 * (the file may be back); a `load_error` (a broken or unsupported file) or an `interrupted` one
 * stays FAILED until it is deployed again.
 */
export type LibraryFailureKind = 'missing_file' | 'load_error' | 'interrupted';

export interface LibraryDeployment {
  modelId: string;
  name: string;
  file: string;
  license: string | null;
  licenseLink: string | null;
  instanceType: InstanceType;
  threads: number | null;
  status: LibraryStatus;
  reason: string | null;
  /** Set when FAILED. */
  failureKind: LibraryFailureKind | null;
  createdAt: number;
  updatedAt: number;
}

interface Row {
  model_id: string;
  name: string;
  file: string;
  license: string | null;
  license_link: string | null;
  instance_type: InstanceType;
  threads: number | null;
  status: LibraryStatus;
  reason: string | null;
  failure_kind: LibraryFailureKind | null;
  created_at: number;
  updated_at: number;
}

const toRecord = (r: Row): LibraryDeployment => ({
  modelId: r.model_id,
  name: r.name,
  file: r.file,
  license: r.license,
  licenseLink: r.license_link,
  instanceType: r.instance_type,
  threads: r.threads,
  status: r.status,
  reason: r.reason,
  failureKind: r.failure_kind,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface LibraryOptions {
  modelsDir: string;
  /** Why `cuda` cannot be used on this host, or null when it can. */
  cudaUnavailable: () => string | null;
  /** Engine settings applied to every instance (tests keep contexts small). */
  engine?: Pick<InstanceOptions, 'contextLength' | 'maxRunningSequences' | 'maxQueued' | 'kvCacheBytes'>;
}

export class LibraryService {
  private readonly live = new Map<string, LlmInstance>();
  private readonly loading = new Set<Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly models: ModelStore,
    private readonly options: LibraryOptions,
    private readonly log: FastifyBaseLogger,
    private readonly clock: () => number = Date.now,
  ) {}

  catalog() {
    return listCatalog(this.options.modelsDir);
  }

  list(): LibraryDeployment[] {
    return (this.db.prepare('SELECT * FROM library_deployments ORDER BY created_at').all() as Row[]).map(toRecord);
  }

  find(modelId: string): LibraryDeployment | undefined {
    const row = this.db.prepare('SELECT * FROM library_deployments WHERE model_id = ?').get(modelId) as Row | undefined;
    return row && toRecord(row);
  }

  get(modelId: string): LibraryDeployment {
    const dep = this.find(modelId);
    if (!dep) throw notFound(`library model "${modelId}" is not deployed`, 'model_id');
    return dep;
  }

  /**
   * The library deployment `modelId` names, for the routes that serve library models; `param` is
   * the field that named it (`model_id` in a URL, `model` in a body). A realtime model is a 400
   * that says where to send it; an unknown one is a 404.
   */
  resolve(modelId: string, param: string): LibraryDeployment {
    const dep = this.find(modelId);
    if (dep) return dep;
    if (this.models.find(modelId)?.kind === 'realtime') throw invalidArgument(`model "${modelId}" is a realtime model; call /v1/${modelId}/predict`, param);
    throw notFound(`model "${modelId}" does not exist; GET /v1/models lists the models served here`, param);
  }

  /**
   * The instance serving `modelId`: as `resolve` when it is not a library model, 503 while it loads
   * or after it failed. The 503 goes to inference callers, so it names no path and gives no
   * operator instructions: the reason is in the deployment status (GET /api/v1/library/deployments/<id>).
   */
  instance(modelId: string, param = 'model_id'): LlmInstance {
    const instance = this.live.get(modelId);
    if (instance) return instance;
    const dep = this.resolve(modelId, param);
    if (dep.status === 'FAILED') {
      throw unavailable(`model "${modelId}" failed to load; its deployment status (GET /api/v1/library/deployments/${modelId}) says why`);
    }
    throw unavailable(`model "${modelId}" is not live yet (${dep.status}); retry when it is LIVE`);
  }

  liveInstances(): Array<{ modelId: string; instance: LlmInstance }> {
    return [...this.live].map(([modelId, instance]) => ({ modelId, instance }));
  }

  async deploy(nameOrFile: string, modelId: string, instanceType: InstanceType, threads: number | null): Promise<LibraryDeployment> {
    this.checkInstanceType(instanceType);
    const entry = await findInCatalog(this.options.modelsDir, nameOrFile);
    if (!entry) throw notFound(`no GGUF file or model named "${nameOrFile}" in MODELS_DIR; see "platform library list"`, 'name');
    if (this.models.find(modelId)) throw conflict(`model "${modelId}" already exists`, 'model_id');
    const taken = this.db.prepare('SELECT model_id FROM library_deployments WHERE name = ?').pluck().get(entry.name) as string | undefined;
    if (taken) throw conflict(`"${entry.name}" is already deployed as model "${taken}"`, 'name');
    const now = this.clock();
    this.db.transaction(() => {
      this.models.create(modelId, LIBRARY_PROJECT, `${entry.name} (${entry.file})`, 'library');
      this.db
        .prepare(
          `INSERT INTO library_deployments (model_id, name, file, license, license_link, instance_type, threads, status, reason, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, 'PENDING', NULL, ?, ?)`,
        )
        .run(modelId, entry.name, entry.file, entry.license, entry.licenseLink, instanceType, threads, now, now);
    })();
    this.startLoad(modelId);
    return this.get(modelId);
  }

  /** Instance changes in flight, and the last failed one's reason, per model. */
  readonly pendingInstance = new Map<string, InstanceType>();
  readonly instanceErrors = new Map<string, string>();

  /**
   * Starts moving a LIVE model to another instance type (or thread count): the new instance
   * loads in the background and takes new requests once ready; the old one finishes its own
   * requests and is then unloaded. Refuses at once what cannot work (no GPU, not LIVE, busy).
   */
  changeInstance(modelId: string, instanceType: InstanceType, threads: number | null): LibraryDeployment {
    this.checkInstanceType(instanceType);
    const dep = this.get(modelId);
    if (dep.status !== 'LIVE') throw conflict(`model "${modelId}" is ${dep.status}; change its instance type once it is LIVE`, 'model_id');
    const busy = this.pendingInstance.get(modelId);
    if (busy) throw conflict(`model "${modelId}" is already switching to ${busy}`, 'model_id');
    this.pendingInstance.set(modelId, instanceType);
    this.instanceErrors.delete(modelId);
    const task = (async () => {
      try {
        const next = await LlmInstance.load(path.join(this.options.modelsDir, dep.file), { instanceType, threads, ...this.options.engine });
        if (!this.find(modelId)) {
          await next.unload();
          return;
        }
        const previous = this.live.get(modelId);
        this.live.set(modelId, next);
        this.db.prepare('UPDATE library_deployments SET instance_type = ?, threads = ?, updated_at = ? WHERE model_id = ?').run(instanceType, threads, this.clock(), modelId);
        this.log.info({ modelId, instanceType, threads }, 'library model switched instance');
        if (previous) await this.retire(previous);
      } catch (err) {
        this.instanceErrors.set(modelId, (err as Error).message);
        this.log.warn({ modelId, reason: (err as Error).message }, 'instance change failed');
      } finally {
        this.pendingInstance.delete(modelId);
      }
    })();
    this.loading.add(task);
    void task.finally(() => this.loading.delete(task));
    return dep;
  }

  async undeploy(modelId: string): Promise<void> {
    this.get(modelId);
    const instance = this.live.get(modelId);
    this.live.delete(modelId);
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM library_deployments WHERE model_id = ?').run(modelId);
      this.db.prepare('DELETE FROM models WHERE id = ?').run(modelId);
    })();
    if (instance) await instance.unload();
  }

  /**
   * Reloads every LIVE deployment after a restart, in the background (503 until loaded), and
   * tries once more each FAILED one whose file was missing: if the file is back it goes LIVE,
   * otherwise it is FAILED again with the same reason. One try per start, so nothing spins.
   */
  restore(): void {
    this.db
      .prepare(
        "UPDATE library_deployments SET status = 'FAILED', reason = 'interrupted by a restart of the host', failure_kind = 'interrupted' WHERE status IN ('PENDING', 'DEPLOYING')",
      )
      .run();
    const tasks: Promise<void>[] = [];
    for (const dep of this.list()) {
      if (dep.status === 'LIVE') tasks.push(this.startLoad(dep.modelId));
      else if (dep.status === 'FAILED' && dep.failureKind === 'missing_file') {
        this.log.info({ modelId: dep.modelId, file: dep.file }, 'library model failed for a missing file: trying again');
        tasks.push(this.startLoad(dep.modelId));
      } else continue;
      this.triedAtStart.add(dep.modelId);
    }
    this.restored = Promise.all(tasks).then(() => undefined);
  }

  /** The models `restore` tried to load at this start (LIVE ones, and FAILED ones whose file was missing). */
  readonly triedAtStart = new Set<string>();

  /** Resolves once every load that `restore` started has ended, LIVE or FAILED (for the start line). */
  whenRestored(): Promise<void> {
    return this.restored;
  }

  private restored: Promise<void> = Promise.resolve();

  async idle(): Promise<void> {
    while (this.loading.size > 0) await Promise.all([...this.loading]);
  }

  async close(): Promise<void> {
    await this.idle();
    const all = [...this.live.values()];
    this.live.clear();
    await Promise.all(all.map((i) => i.unload()));
  }

  private checkInstanceType(type: InstanceType): void {
    if (type === 'cuda') {
      const why = this.options.cudaUnavailable();
      if (why) throw invalidArgument(`instance type cuda is not available on this host: ${why}`, 'instance_type');
    }
  }

  private setStatus(modelId: string, status: LibraryStatus, failure: { kind: LibraryFailureKind; reason: string } | null = null): void {
    this.db
      .prepare('UPDATE library_deployments SET status = ?, reason = ?, failure_kind = ?, updated_at = ? WHERE model_id = ?')
      .run(status, failure?.reason ?? null, failure?.kind ?? null, this.clock(), modelId);
  }

  /** A load failure as the deployment records it. */
  private failureOf(err: unknown, file: string): { kind: LibraryFailureKind; reason: string } {
    if (err instanceof ModelFileMissingError) {
      return {
        kind: 'missing_file',
        reason: `the model file "${file}" is missing from MODELS_DIR (${this.options.modelsDir}); put it back and restart the host, which tries again at start-up, or undeploy the model`,
      };
    }
    return { kind: 'load_error', reason: (err as Error).message };
  }

  private startLoad(modelId: string): Promise<void> {
    const task = (async () => {
      await new Promise((resolve) => setImmediate(resolve));
      const dep = this.find(modelId);
      if (!dep) return;
      this.setStatus(modelId, 'DEPLOYING');
      try {
        const instance = await LlmInstance.load(path.join(this.options.modelsDir, dep.file), { instanceType: dep.instanceType, threads: dep.threads, ...this.options.engine });
        if (!this.find(modelId)) {
          await instance.unload(); // undeployed while loading
          return;
        }
        this.live.set(modelId, instance);
        this.setStatus(modelId, 'LIVE');
        this.log.info({ modelId, file: dep.file }, 'library model live');
      } catch (err) {
        const failure = this.failureOf(err, dep.file);
        this.setStatus(modelId, 'FAILED', failure);
        this.log.warn({ modelId, failureKind: failure.kind, reason: failure.reason }, 'library model failed to load');
      }
    })();
    this.loading.add(task);
    void task.finally(() => this.loading.delete(task));
    return task;
  }

  /** Waits for the old instance's requests to finish, then frees it. */
  private async retire(instance: LlmInstance): Promise<void> {
    await instance.drain();
    await instance.unload();
  }
}
