// Library deployments: a GGUF file from MODELS_DIR loaded under a model id in the project
// `library`. Loading is asynchronous (PENDING -> DEPLOYING -> LIVE, or FAILED with the reason);
// changing the instance type loads a second instance, switches new requests to it when it is
// ready, and unloads the first once its requests have finished; undeploying frees the memory.
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely, Selectable } from 'kysely';
import { forUpdate, isUniqueViolation } from '../../store/dialect.js';
import type { ControlPlaneTables, LibraryDeploymentsTable } from '../../store/schema.js';
import { conflict, invalidArgument, notFound, unavailable, type ApiError } from '../../errors.js';
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

type Row = Selectable<LibraryDeploymentsTable>;

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
  /**
   * How many times each model id was undeployed by this host: a load that started before an
   * undeploy sees the count change and unloads what it loaded instead of making it live.
   */
  private readonly undeploys = new Map<string, number>();

  constructor(
    private readonly db: Kysely<ControlPlaneTables>,
    private readonly models: ModelStore,
    private readonly options: LibraryOptions,
    private readonly log: FastifyBaseLogger,
    private readonly clock: () => number = Date.now,
  ) {}

  catalog() {
    return listCatalog(this.options.modelsDir);
  }

  async list(): Promise<LibraryDeployment[]> {
    const rows = await this.db.selectFrom('library_deployments').selectAll().orderBy('created_at').execute();
    return rows.map(toRecord);
  }

  async find(modelId: string): Promise<LibraryDeployment | undefined> {
    const row = await this.db.selectFrom('library_deployments').selectAll().where('model_id', '=', modelId).executeTakeFirst();
    return row && toRecord(row);
  }

  async get(modelId: string): Promise<LibraryDeployment> {
    const dep = await this.find(modelId);
    if (!dep) throw notFound(`library model "${modelId}" is not deployed`, 'model_id');
    return dep;
  }

  /**
   * The library deployment `modelId` names, for the routes that serve library models; `param` is
   * the field that named it (`model_id` in a URL, `model` in a body). A realtime model is a 400
   * that says where to send it; an unknown one is a 404.
   */
  async resolve(modelId: string, param: string): Promise<LibraryDeployment> {
    const dep = await this.find(modelId);
    if (dep) return dep;
    if ((await this.models.find(modelId))?.kind === 'realtime') throw invalidArgument(`model "${modelId}" is a realtime model; call /v1/${modelId}/predict`, param);
    throw notFound(`model "${modelId}" does not exist; GET /v1/models lists the models served here`, param);
  }

  /**
   * `resolve` on the request path: a model live on this host is a library model, known from memory
   * without reading the database; any other gets resolve's 404 or 400.
   */
  async checkModel(modelId: string, param: string): Promise<void> {
    if (this.live.has(modelId)) return;
    await this.resolve(modelId, param);
  }

  /**
   * The instance serving `modelId` on this host, from memory only, so that a request takes it and
   * starts its generation with no await between (src/llm/chat/serve.ts). Callers first ask
   * `serving`, which says why a model is not live; this one answers a plain 503 for a model that
   * stopped being live in between (undeployed meanwhile).
   */
  instance(modelId: string): LlmInstance {
    const instance = this.live.get(modelId);
    if (instance) return instance;
    throw unavailable(`model "${modelId}" is not live; retry when it is LIVE`);
  }

  /**
   * The instance serving `modelId`: from memory when it is live here; otherwise the database says
   * why not: as `resolve` when it is not a library model, 503 while it loads or after it failed.
   * The 503 goes to inference callers, so it names no path and gives no operator instructions:
   * the reason is in the deployment status (GET /api/v1/library/deployments/<id>).
   */
  async serving(modelId: string, param = 'model_id'): Promise<LlmInstance> {
    const instance = this.live.get(modelId);
    if (instance) return instance;
    const dep = await this.resolve(modelId, param);
    const loaded = this.live.get(modelId); // went live while the database answered
    if (loaded) return loaded;
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
    const now = this.clock();
    const row: Row = {
      model_id: modelId,
      name: entry.name,
      file: entry.file,
      license: entry.license,
      license_link: entry.licenseLink,
      instance_type: instanceType,
      threads,
      status: 'PENDING',
      reason: null,
      failure_kind: null,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.db.transaction().execute(async (trx) => {
        // Nothing to lock while the model and the name are free: their unique keys decide between
        // two replicas deploying at once, and the loser's unique violation is answered below.
        const conflictNow = await this.deployConflict(trx, modelId, entry.name);
        if (conflictNow) throw conflictNow;
        // The model record, on this transaction, so that it commits with the deployment or not at all.
        await this.models.create(modelId, LIBRARY_PROJECT, `${entry.name} (${entry.file})`, 'library', trx);
        await trx.insertInto('library_deployments').values(row).execute();
      });
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      // Another deploy (here or on another replica) took the model id or the name first.
      throw (await this.deployConflict(this.db, modelId, entry.name)) ?? conflict(`model "${modelId}" or "${entry.name}" was deployed at the same time; try again`, 'model_id');
    }
    this.startLoad(modelId);
    return toRecord(row);
  }

  /** Why `modelId` cannot be deployed from the file named `name`: its id or the file is taken. */
  private async deployConflict(db: Kysely<ControlPlaneTables>, modelId: string, name: string): Promise<ApiError | undefined> {
    if (await db.selectFrom('models').select('id').where('id', '=', modelId).executeTakeFirst()) return conflict(`model "${modelId}" already exists`, 'model_id');
    const taken = await db.selectFrom('library_deployments').select('model_id').where('name', '=', name).executeTakeFirst();
    if (taken) return conflict(`"${name}" is already deployed as model "${taken.model_id}"`, 'name');
    return undefined;
  }

  /** Instance changes in flight, and the last failed one's reason, per model (this host's instances). */
  readonly pendingInstance = new Map<string, InstanceType>();
  readonly instanceErrors = new Map<string, string>();

  /**
   * Starts moving a LIVE model to another instance type (or thread count): the new instance
   * loads in the background and takes new requests once ready; the old one finishes its own
   * requests and is then unloaded. Refuses at once what cannot work (no GPU, not LIVE, busy).
   */
  async changeInstance(modelId: string, instanceType: InstanceType, threads: number | null): Promise<LibraryDeployment> {
    this.checkInstanceType(instanceType);
    const dep = await this.get(modelId);
    if (dep.status !== 'LIVE') throw conflict(`model "${modelId}" is ${dep.status}; change its instance type once it is LIVE`, 'model_id');
    // From here to the set, no await: two changes of one model cannot both pass.
    const busy = this.pendingInstance.get(modelId);
    if (busy) throw conflict(`model "${modelId}" is already switching to ${busy}`, 'model_id');
    this.pendingInstance.set(modelId, instanceType);
    this.instanceErrors.delete(modelId);
    const undeploys = this.undeployCount(modelId);
    const task = (async () => {
      let next: LlmInstance | undefined;
      try {
        next = await LlmInstance.load(path.join(this.options.modelsDir, dep.file), { instanceType, threads, ...this.options.engine });
        const updated = await this.db
          .updateTable('library_deployments')
          .set({ instance_type: instanceType, threads, updated_at: this.clock() })
          .where('model_id', '=', modelId)
          .executeTakeFirst();
        // Undeployed while loading (no row left, or undeployed here): free the new instance.
        if (Number(updated.numUpdatedRows) === 0 || this.undeployCount(modelId) !== undeploys) {
          const unused = next;
          next = undefined;
          await unused.unload();
          return;
        }
        const previous = this.live.get(modelId);
        this.live.set(modelId, next);
        next = undefined;
        this.log.info({ modelId, instanceType, threads }, 'library model switched instance');
        if (previous) await this.retire(previous);
      } catch (err) {
        if (next) await next.unload().catch(() => undefined);
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
    const removed = await this.db.transaction().execute(async (trx) => {
      // Locked, so that two undeploys of one model (on two replicas) take turns: one 204, one 404.
      const tx: Kysely<ControlPlaneTables> = trx;
      const row = await forUpdate(tx, tx.selectFrom('library_deployments').select('model_id').where('model_id', '=', modelId)).executeTakeFirst();
      if (!row) return false;
      await trx.deleteFrom('library_deployments').where('model_id', '=', modelId).execute();
      await trx.deleteFrom('models').where('id', '=', modelId).execute();
      return true;
    });
    if (!removed) throw notFound(`library model "${modelId}" is not deployed`, 'model_id');
    this.undeploys.set(modelId, this.undeployCount(modelId) + 1);
    const instance = this.live.get(modelId);
    this.live.delete(modelId);
    if (instance) await instance.unload();
  }

  /**
   * Reloads every LIVE deployment after a restart, in the background (503 until loaded), and
   * tries once more each FAILED one whose file was missing: if the file is back it goes LIVE,
   * otherwise it is FAILED again with the same reason. One try per start, so nothing spins.
   * Resolves once the records are settled and the loads have started (`whenRestored` waits for
   * the loads).
   */
  async restore(): Promise<void> {
    await this.db
      .updateTable('library_deployments')
      .set({ status: 'FAILED', reason: 'interrupted by a restart of the host', failure_kind: 'interrupted' })
      .where('status', 'in', ['PENDING', 'DEPLOYING'])
      .execute();
    const tasks: Promise<void>[] = [];
    for (const dep of await this.list()) {
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

  private undeployCount(modelId: string): number {
    return this.undeploys.get(modelId) ?? 0;
  }

  /** Records a status; false when the deployment is gone (undeployed meanwhile). */
  private async setStatus(modelId: string, status: LibraryStatus, failure: { kind: LibraryFailureKind; reason: string } | null = null): Promise<boolean> {
    const result = await this.db
      .updateTable('library_deployments')
      .set({ status, reason: failure?.reason ?? null, failure_kind: failure?.kind ?? null, updated_at: this.clock() })
      .where('model_id', '=', modelId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
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
    const undeploys = this.undeployCount(modelId);
    const task = (async () => {
      await new Promise((resolve) => setImmediate(resolve));
      const dep = await this.find(modelId);
      if (!dep) return;
      let instance: LlmInstance | undefined;
      try {
        await this.setStatus(modelId, 'DEPLOYING');
        instance = await LlmInstance.load(path.join(this.options.modelsDir, dep.file), { instanceType: dep.instanceType, threads: dep.threads, ...this.options.engine });
        const recorded = await this.setStatus(modelId, 'LIVE');
        // Undeployed while loading (no row left, or undeployed here): free what was loaded. Checked
        // and set with no await between, so an undeploy on this host either comes first (and is
        // seen here) or finds the instance live and unloads it.
        if (!recorded || this.undeployCount(modelId) !== undeploys) {
          const unused = instance;
          instance = undefined;
          await unused.unload();
          return;
        }
        this.live.set(modelId, instance);
        instance = undefined;
        this.log.info({ modelId, file: dep.file }, 'library model live');
      } catch (err) {
        if (instance) await instance.unload().catch(() => undefined);
        const failure = this.failureOf(err, dep.file);
        await this.setStatus(modelId, 'FAILED', failure).catch((e: unknown) => this.log.error({ modelId, err: e }, 'cannot record a library load failure'));
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
