// Library deployments: a GGUF file from MODELS_DIR loaded under a model id in the project
// `library`. Loading is asynchronous (PENDING -> DEPLOYING -> LIVE, or FAILED with the reason);
// changing the instance type loads a second instance, switches new requests to it when it is
// ready, and unloads the first once its requests have finished; undeploying frees the memory.
// Each replica runs its own engine: as a part of the replica's snapshot (`snapshotPart`) it loads
// the deployments it does not hold, unloads those undeployed elsewhere and follows instance
// changes made elsewhere; a deployment goes LIVE once every live replica has it loaded. A
// deployment on its way when the host stopped is carried on at the next start.
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely, Selectable } from 'kysely';
import { forUpdate, isUniqueViolation } from '../../store/dialect.js';
import type { ControlPlaneTables, LibraryDeploymentsTable } from '../../store/schema.js';
import { ApiError, conflict, invalidArgument, notFound, unavailable } from '../../errors.js';
import type { ModelStore } from '../../models/store.js';
import { LIBRARY_PROJECT } from '../../models/names.js';
import { fileStem, findInCatalog, generalNameOf, listCatalog } from './catalog.js';
import type { InstanceType } from '../../native/surface.js';
import { LlmInstance, ModelFileMissingError, type InstanceOptions } from './instance.js';
import { speculativeSetting, speculativeTokens } from './speculative.js';
import { holdsLibraryModel, libraryLoadId, type ReplicaRecord } from '../../cluster/replicas.js';
import { placement } from '../../cluster/placement.js';

export type LibraryStatus = 'PENDING' | 'DEPLOYING' | 'LIVE' | 'FAILED';

/**
 * What kind of failure a FAILED deployment had: a `missing_file` one is tried again at start-up
 * (the file may be back); a `load_error` (a broken or unsupported file) or an `interrupted` one
 * stays FAILED until it is deployed again.
 */
export type LibraryFailureKind = 'missing_file' | 'load_error' | 'interrupted';

export interface LibraryDeployment {
  modelId: string;
  /**
   * The deployment's name (SPEC.md "model name"): unique among deployments, immutable; by default
   * the file name without `.gguf` (deployments made before it were named by `general.name`).
   */
  name: string;
  /** Relative to MODELS_DIR. */
  file: string;
  license: string | null;
  licenseLink: string | null;
  instanceType: InstanceType;
  threads: number | null;
  status: LibraryStatus;
  reason: string | null;
  /** Set when FAILED. */
  failureKind: LibraryFailureKind | null;
  /** On how many replicas it runs; null: on every replica. */
  replicas: number | null;
  /** Speculative decoding: "ngram:<k>" or "draft:<k>" (speculative.ts), or null for none. */
  speculative: string | null;
  /** The draft model of "draft:<k>", relative to MODELS_DIR. */
  draftModel: string | null;
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
  replicas: r.replicas ?? null,
  speculative: r.speculative ?? null,
  draftModel: r.draft_model ?? null,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface LibraryOptions {
  modelsDir: string;
  /** Why `cuda` cannot be used on this host, or null when it can. */
  cudaUnavailable: () => string | null;
  /** A deployment that a replica it is placed on has not loaded this long after it was made is FAILED (default 600 s). */
  deployTimeoutMs?: number;
  /** Engine settings applied to every instance (tests keep contexts small). */
  engine?: Pick<InstanceOptions, 'contextLength' | 'maxRunningSequences' | 'maxQueued' | 'kvCacheBytes'>;
}

/** What the library needs of the replica it runs in (src/cluster/). */
export interface LibraryCluster {
  selfId: string;
  /** The live replicas, as last read. */
  live(): ReplicaRecord[];
  /** Reads the configuration again now: after a load, so that the replica reports it. */
  poke(): void;
  /** Whether another replica is live now (read from the database, not the last snapshot). */
  othersLive(): Promise<boolean>;
}

/** The longest deployment name (SPEC.md "model name"). */
export const MAX_DEPLOYMENT_NAME = 255;

/** A deployment name given explicitly: 1-255 characters, no control characters, no spaces around it. */
function checkDeploymentName(name: string): void {
  // eslint-disable-next-line no-control-regex
  if (name.length === 0 || name.length > MAX_DEPLOYMENT_NAME || name.trim() !== name || /[\u0000-\u001f\u007f]/.test(name)) {
    throw invalidArgument(`the deployment name must be 1 to ${MAX_DEPLOYMENT_NAME} characters, with no control characters and no spaces at either end`, 'name');
  }
}

export class LibraryService {
  private readonly live = new Map<string, LlmInstance>();
  private readonly loading = new Set<Promise<void>>();
  /**
   * How many times each model id was undeployed by this host: a load that started before an
   * undeploy sees the count change and unloads what it loaded instead of making it live.
   */
  private readonly undeploys = new Map<string, number>();
  /** Loads running on this host now, by model. */
  private readonly loadingTasks = new Map<string, Promise<void>>();
  /** created_at of the deployment each loaded instance was loaded for: a redeploy of the id is another. */
  private readonly loadedFrom = new Map<string, number>();
  /** Instance switches that failed here, as "<type>/<threads>@<updated_at>": not tried again until the row changes. */
  private readonly switchFailed = new Map<string, string>();
  /** Models whose load failed on this host, with the row's updated_at then: not tried again until it changes. */
  private readonly failedHere = new Map<string, number>();
  /** Deployments on their way at the last read of the configuration. */
  private inProgress: LibraryDeployment[] = [];
  /**
   * Set when the host keeps a replica snapshot (src/server/app.ts): models are placed on the live
   * replicas, and a deployment goes LIVE once every replica it is placed on has it loaded. Unset
   * (a service on its own, in tests), a load makes the deployment LIVE at once.
   */
  cluster: LibraryCluster | undefined;

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
    // LIVE, but not here: placed on other replicas, or moving (a request forwarded in between).
    if (dep.status === 'LIVE') throw new ApiError('unavailable', `model "${modelId}" is not loaded on this replica right now; retry shortly`, null, { 'retry-after': '1' });
    throw unavailable(`model "${modelId}" is not live yet (${dep.status}); retry when it is LIVE`);
  }

  /** Whether `modelId` is loaded and serving on this host. */
  servesHere(modelId: string): boolean {
    return this.live.has(modelId);
  }

  /** The models loaded here, as "<model id>@<instance type>/<threads or all>" (for the replica's row). */
  loadedIds(): string[] {
    return [...this.live].map(([modelId, i]) => libraryLoadId(modelId, i.options.instanceType, i.options.threads ?? null));
  }

  liveInstances(): Array<{ modelId: string; instance: LlmInstance }> {
    return [...this.live].map(([modelId, instance]) => ({ modelId, instance }));
  }

  /**
   * Deploys the catalogue file `source` names (a file relative to MODELS_DIR, its base name, or its
   * `general.name` when no other file shares it) as `modelId`, under the deployment name `name`:
   * by default the file name without `.gguf`, so that two files with one `general.name` (two
   * quantizations of a model) deploy side by side. The name is unique among deployments (a 409
   * naming the deployment that holds it) and never changes. `sourceParam` is the body field that
   * named the file, for the refusals about it.
   */
  async deploy(
    source: string,
    modelId: string,
    instanceType: InstanceType,
    threads: number | null,
    replicas: number | null = null,
    name: string | null = null,
    sourceParam = 'name',
    speculative: string | null = null,
    draftModel: string | null = null,
  ): Promise<LibraryDeployment> {
    this.checkInstanceType(instanceType);
    if (name !== null) checkDeploymentName(name);
    const setting = speculativeSetting(speculative, draftModel);
    const entry = await findInCatalog(this.options.modelsDir, source, sourceParam);
    if (!entry) throw notFound(`no GGUF file or model named "${source}" in MODELS_DIR; see "platform library list"`, sourceParam);
    if (entry.unsupported !== null) throw invalidArgument(`"${entry.file}" cannot be loaded: ${entry.unsupported}`, sourceParam);
    const draft = draftModel === null ? null : await findInCatalog(this.options.modelsDir, draftModel, 'draft_model');
    if (draftModel !== null && !draft) throw notFound(`no GGUF file or model named "${draftModel}" in MODELS_DIR for draft_model; see "platform library list"`, 'draft_model');
    const deploymentName = name ?? fileStem(entry.file);
    const now = this.clock();
    const row: Row = {
      model_id: modelId,
      name: deploymentName,
      file: entry.file,
      license: entry.license,
      license_link: entry.licenseLink,
      instance_type: instanceType,
      threads,
      status: 'PENDING',
      reason: null,
      failure_kind: null,
      replicas,
      speculative: setting,
      draft_model: draft?.file ?? null,
      created_at: now,
      updated_at: now,
    };
    // A clash of the default name says how to deploy the file all the same.
    const hint = name === null ? `; deploy "${entry.file}" under another "name"` : '';
    try {
      await this.db.transaction().execute(async (trx) => {
        // Nothing to lock while the model and the name are free: their unique keys decide between
        // two replicas deploying at once, and the loser's unique violation is answered below.
        const conflictNow = await this.deployConflict(trx, modelId, deploymentName, hint);
        if (conflictNow) throw conflictNow;
        // The model record, on this transaction, so that it commits with the deployment or not at all.
        await this.models.create(modelId, LIBRARY_PROJECT, `${entry.name} (${entry.file})`, 'library', trx);
        await trx.insertInto('library_deployments').values(row).execute();
      });
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      // Another deploy (here or on another replica) took the model id or the name first.
      throw (await this.deployConflict(this.db, modelId, deploymentName, hint)) ?? conflict(`model "${modelId}" or the name "${deploymentName}" was deployed at the same time; try again`, 'model_id');
    }
    const record = toRecord(row);
    // In a replica, only where it is placed; the other replicas' reads of the change load it there.
    if (!this.cluster || this.placedHere(record)) this.startLoad(modelId);
    return record;
  }

  /** Why `modelId` cannot be deployed under the deployment name `name`: its id or the name is taken. */
  private async deployConflict(db: Kysely<ControlPlaneTables>, modelId: string, name: string, hint: string): Promise<ApiError | undefined> {
    if (await db.selectFrom('models').select('id').where('id', '=', modelId).executeTakeFirst()) return conflict(`model "${modelId}" already exists`, 'model_id');
    const taken = await db.selectFrom('library_deployments').select('model_id').where('name', '=', name).executeTakeFirst();
    if (taken) return conflict(`"${name}" is already deployed as model "${taken.model_id}"${hint}`, 'name');
    return undefined;
  }

  /** `general.name` of each deployment's file (null when it has none or cannot be read now), by model id. */
  async generalNames(deployments: LibraryDeployment[]): Promise<Map<string, string | null>> {
    const names = await Promise.all(deployments.map((d) => generalNameOf(this.options.modelsDir, d.file)));
    return new Map(deployments.map((d, i) => [d.modelId, names[i] ?? null]));
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
    // Not placed on this replica: record the change; the replicas it runs on follow it.
    if (this.cluster && !this.placedHere(dep)) {
      await this.db.updateTable('library_deployments').set({ instance_type: instanceType, threads, updated_at: this.clock() }).where('model_id', '=', modelId).execute();
      return dep;
    }
    this.switchInstance(dep, instanceType, threads);
    return dep;
  }

  /** Loads `dep` on a new instance, records it, and moves new requests to it (changeInstance). */
  private switchInstance(dep: LibraryDeployment, instanceType: InstanceType, threads: number | null): void {
    const modelId = dep.modelId;
    this.pendingInstance.set(modelId, instanceType);
    this.instanceErrors.delete(modelId);
    const undeploys = this.undeployCount(modelId);
    const task = (async () => {
      let next: LlmInstance | undefined;
      try {
        next = await LlmInstance.load(path.join(this.options.modelsDir, dep.file), { instanceType, threads, ...this.speculativeOptions(dep), ...this.options.engine });
        const updated = await this.db
          .updateTable('library_deployments')
          .set({ instance_type: instanceType, threads, updated_at: this.clock() })
          .where('model_id', '=', modelId)
          .where((eb) => eb.or([eb('instance_type', '!=', instanceType), threads === null ? eb('threads', 'is not', null) : eb.or([eb('threads', 'is', null), eb('threads', '!=', threads)])]))
          .executeTakeFirst();
        const row = await this.find(modelId);
        // Undeployed while loading (no row left, or undeployed here): free the new instance.
        if (!row || this.undeployCount(modelId) !== undeploys || (Number(updated.numUpdatedRows) === 0 && (row.instanceType !== instanceType || row.threads !== threads))) {
          const unused = next;
          next = undefined;
          await unused.unload();
          return;
        }
        const previous = this.live.get(modelId);
        this.live.set(modelId, next);
        this.loadedFrom.set(modelId, row.createdAt);
        next = undefined;
        this.switchFailed.delete(modelId);
        this.log.info({ modelId, instanceType, threads }, 'library model switched instance');
        if (previous) await this.retire(previous);
      } catch (err) {
        if (next) await next.unload().catch(() => undefined);
        this.instanceErrors.set(modelId, (err as Error).message);
        const row = await this.find(modelId).catch(() => undefined);
        if (row) this.switchFailed.set(modelId, `${instanceType}/${threads}@${row.updatedAt}`);
        this.log.warn({ modelId, reason: (err as Error).message }, 'instance change failed');
      } finally {
        this.pendingInstance.delete(modelId);
      }
    })();
    this.loading.add(task);
    void task.finally(() => this.loading.delete(task));
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
    this.loadedFrom.delete(modelId);
    if (instance) await instance.unload();
  }

  /**
   * Loads, after a restart, every LIVE deployment and every one that was on its way (those placed
   * on this replica, when it is one of several), in the background (503 until loaded), and tries
   * once more each FAILED one whose file was missing: if the file is back it goes LIVE, otherwise
   * it is FAILED again with the same reason. One try per start, so nothing spins. In a replica it
   * runs after the first snapshot, whose read has started the loads already; this joins them.
   * Resolves once the loads have started (`whenRestored` waits for them).
   */
  async restore(): Promise<void> {
    const tasks: Promise<void>[] = [];
    for (const dep of await this.list()) {
      if (this.cluster && !this.placedHere(dep)) continue;
      if (dep.status === 'FAILED') {
        if (dep.failureKind !== 'missing_file') continue;
        this.log.info({ modelId: dep.modelId, file: dep.file }, 'library model failed for a missing file: trying again');
        await this.setStatus(dep.modelId, 'PENDING', null, ['FAILED']);
      } else if (this.live.has(dep.modelId)) {
        this.triedAtStart.add(dep.modelId);
        continue;
      }
      tasks.push(this.startLoad(dep.modelId));
      this.triedAtStart.add(dep.modelId);
    }
    this.restored = Promise.all(tasks).then(() => undefined);
  }

  /**
   * Library models as a part of the replica's snapshot (src/cluster/config-sync.ts): load what is
   * deployed and not held here, unload what was undeployed elsewhere, follow an instance change
   * made elsewhere; and make LIVE what every live replica has loaded.
   */
  readonly snapshotPart = {
    name: 'library',
    apply: () => this.apply(),
    advance: (live: ReplicaRecord[]) => this.advance(live),
    // Also while this replica holds a model placed elsewhere now, until the new holders have it.
    waiting: () => this.inProgress.length > 0 || this.handingOver,
  };

  private handingOver = false;

  private async apply(): Promise<void> {
    const deployments = await this.list();
    const byId = new Map(deployments.map((d) => [d.modelId, d]));
    this.inProgress = deployments.filter((d) => d.status === 'PENDING' || d.status === 'DEPLOYING');
    for (const [modelId, instance] of [...this.live]) {
      const dep = byId.get(modelId);
      const why = this.whyUnload(modelId, dep);
      if (why !== undefined) {
        this.undeploys.set(modelId, this.undeployCount(modelId) + 1);
        this.live.delete(modelId);
        this.loadedFrom.delete(modelId);
        this.log.info({ modelId }, `library model ${why}: unloaded here`);
        void this.retire(instance);
      } else if (dep && (dep.instanceType !== instance.options.instanceType || dep.threads !== instance.options.threads) && !this.pendingInstance.has(modelId)) {
        // Changed through another replica; a switch that failed here (no GPU) waits for the next change.
        if (this.switchFailed.get(modelId) !== `${dep.instanceType}/${dep.threads}@${dep.updatedAt}`) this.switchInstance(dep, dep.instanceType, dep.threads);
      }
    }
    this.handingOver = deployments.some((d) => this.live.has(d.modelId) && !this.placedHere(d));
    for (const dep of deployments) {
      if (dep.status === 'FAILED' || this.live.has(dep.modelId) || this.loadingTasks.has(dep.modelId) || !this.placedHere(dep)) continue;
      if (this.failedHere.get(dep.modelId) === dep.updatedAt) continue;
      void this.startLoad(dep.modelId);
    }
  }

  /** Why this replica lets go of the instance it holds for `modelId` (its deployment now `dep`), if it does. */
  private whyUnload(modelId: string, dep: LibraryDeployment | undefined): string | undefined {
    if (!dep) return 'undeployed elsewhere';
    if (dep.status === 'FAILED') return 'failed elsewhere';
    if (dep.createdAt !== this.loadedFrom.get(modelId)) return 'deployed again';
    // Placed elsewhere now: kept until the replicas it moved to have it (make before break).
    if (!this.placedHere(dep) && this.heldWherePlaced(dep)) return 'placed on other replicas';
    return undefined;
  }

  /** The replicas `dep` runs on, of the live ones (this one counted while it drains). */
  placedOn(dep: Pick<LibraryDeployment, 'modelId' | 'replicas'>, live: ReplicaRecord[] = this.cluster?.live() ?? []): string[] {
    if (!this.cluster) return [];
    const ids = new Set(live.map((r) => r.id));
    ids.add(this.cluster.selfId);
    return placement(dep.modelId, dep.replicas, [...ids]);
  }

  /** Whether every replica `dep` is placed on has it loaded: only then does a replica it moved from let it go. */
  private heldWherePlaced(dep: LibraryDeployment): boolean {
    const live = this.cluster?.live() ?? [];
    return this.placedOn(dep).every((id) => live.some((r) => r.id === id && holdsLibraryModel(r.loaded, dep.modelId)));
  }

  private placedHere(dep: LibraryDeployment): boolean {
    return !this.cluster || this.placedOn(dep).includes(this.cluster.selfId);
  }

  /** Makes LIVE each deployment on its way that every replica it is placed on has loaded; true when one went LIVE. */
  private async advance(live: ReplicaRecord[]): Promise<boolean> {
    let changed = false;
    const timeoutMs = this.options.deployTimeoutMs ?? 600_000;
    for (const dep of this.inProgress) {
      const placed = new Set(this.placedOn(dep, live));
      const missing = live.filter((r) => placed.has(r.id) && !holdsLibraryModel(r.loaded, dep.modelId)).map((r) => r.id);
      if (missing.length > 0 && this.clock() - dep.createdAt > timeoutMs) {
        const reason = `not loaded on replica${missing.length === 1 ? '' : 's'} ${missing.join(', ')} within ${timeoutMs / 1000} s (DEPLOY_TIMEOUT_SECONDS)`;
        if (await this.setStatus(dep.modelId, 'FAILED', { kind: 'load_error', reason }, ['PENDING', 'DEPLOYING'])) changed = true;
        continue;
      }
      if (!this.live.has(dep.modelId) || missing.length > 0) continue;
      const result = await this.db
        .updateTable('library_deployments')
        .set({ status: 'LIVE', reason: null, failure_kind: null, updated_at: this.clock() })
        .where('model_id', '=', dep.modelId)
        .where('status', 'in', ['PENDING', 'DEPLOYING'])
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) > 0) changed = true;
    }
    return changed;
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

  /**
   * Records a status, from any status or only from `from`; false when the deployment is gone
   * (undeployed meanwhile) or was not in one of those.
   */
  private async setStatus(modelId: string, status: LibraryStatus, failure: { kind: LibraryFailureKind; reason: string } | null = null, from?: LibraryStatus[]): Promise<boolean> {
    let query = this.db
      .updateTable('library_deployments')
      .set({ status, reason: failure?.reason ?? null, failure_kind: failure?.kind ?? null, updated_at: this.clock() })
      .where('model_id', '=', modelId);
    if (from) query = query.where('status', 'in', from);
    const result = await query.executeTakeFirst();
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

  /** The engine's speculative decoding options for a deployment. */
  private speculativeOptions(dep: LibraryDeployment): Pick<InstanceOptions, 'speculativeTokens' | 'draftModel'> {
    return {
      speculativeTokens: speculativeTokens(dep.speculative),
      ...(dep.draftModel !== null ? { draftModel: path.join(this.options.modelsDir, dep.draftModel) } : {}),
    };
  }

  /** Loads `modelId` here, unless a load of it already runs (then that one's promise). */
  private startLoad(modelId: string): Promise<void> {
    const running = this.loadingTasks.get(modelId);
    if (running) return running;
    const undeploys = this.undeployCount(modelId);
    const task = (async () => {
      let dep: LibraryDeployment | undefined;
      let instance: LlmInstance | undefined;
      try {
        await new Promise((resolve) => setImmediate(resolve));
        dep = await this.find(modelId);
        if (!dep) return;
        if (dep.status === 'PENDING') await this.setStatus(modelId, 'DEPLOYING', null, ['PENDING']);
        instance = await LlmInstance.load(path.join(this.options.modelsDir, dep.file), {
          instanceType: dep.instanceType,
          threads: dep.threads,
          ...this.speculativeOptions(dep),
          ...this.options.engine,
        });
        // On its own the service makes it LIVE now; in a replica, once every replica it is placed on has it.
        const current = await this.find(modelId);
        const recorded = current?.createdAt === dep.createdAt && (this.cluster ? true : await this.setStatus(modelId, 'LIVE'));
        // Undeployed while loading (no row left, deployed again, or undeployed here): free what was
        // loaded. Checked and set with no await between, so an undeploy on this host either comes
        // first (and is seen here) or finds the instance live and unloads it.
        if (!recorded || this.undeployCount(modelId) !== undeploys) {
          const unused = instance;
          instance = undefined;
          await unused.unload();
          return;
        }
        this.live.set(modelId, instance);
        this.loadedFrom.set(modelId, dep.createdAt);
        instance = undefined;
        this.failedHere.delete(modelId);
        this.log.info({ modelId, file: dep.file }, 'library model loaded');
        this.cluster?.poke();
      } catch (err) {
        if (instance) await instance.unload().catch(() => undefined);
        if (!dep) {
          this.log.error({ modelId, err }, 'cannot read a library deployment to load it');
          return;
        }
        const failure = this.failureOf(err, dep.file);
        this.failedHere.set(modelId, dep.updatedAt);
        await this.recordFailure(dep, failure).catch((e: unknown) => this.log.error({ modelId, err: e }, 'cannot record a library load failure'));
        this.log.warn({ modelId, failureKind: failure.kind, reason: failure.reason }, 'library model failed to load');
      } finally {
        this.loadingTasks.delete(modelId);
      }
    })();
    this.loadingTasks.set(modelId, task);
    this.loading.add(task);
    void task.finally(() => this.loading.delete(task));
    return task;
  }

  /**
   * A load that failed here. One on its way fails for every replica (it cannot go LIVE on all). A
   * LIVE one fails only when this replica is the only one live: other replicas may serve it, and
   * this one reports it is not loaded here ("applied on 2/3").
   */
  private async recordFailure(dep: LibraryDeployment, failure: { kind: LibraryFailureKind; reason: string }): Promise<void> {
    if (dep.status !== 'LIVE') {
      await this.setStatus(dep.modelId, 'FAILED', failure, ['PENDING', 'DEPLOYING']);
      return;
    }
    if (this.cluster && (await this.cluster.othersLive())) return;
    await this.setStatus(dep.modelId, 'FAILED', failure, ['LIVE']);
  }

  /** Waits for the old instance's requests to finish, then frees it. */
  private async retire(instance: LlmInstance): Promise<void> {
    await instance.drain();
    await instance.unload();
  }
}
