// LibraryService's records on both engines of the store: the embedded SQLite file (DATA_DIR) and
// PostgreSQL (DATABASE_URL, against the real server of test/helpers/postgres.ts). Deploy, the
// instance change, undeploy and restore give the same records on each, the refusals included (a
// model id or a file already deployed, an unknown model, a reserved id); restore retries a
// `missing_file` failure once per start and leaves the other kinds alone; and two connections to
// one PostgreSQL store (two replicas) deploying or undeploying the same thing at once end with one
// winner and the same refusal the loser would get one after the other.
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import { LibraryService, type LibraryDeployment } from '../src/llm/library/service.js';
import { ModelStore } from '../src/models/store.js';
import { openStore, type Store, type StoreDialect } from '../src/store/store.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { tempDir } from './helpers/paths.js';
import { useStoreEngines } from './helpers/store-engines.js';

// Beyond 2^31, so that a 32-bit column or a BIGINT read as a string would show.
const T0 = 1_795_000_000_123;
const NO_GPU = 'no GPU in this test';

const silent = {
  level: 'silent',
  info() {},
  warn() {},
  error() {},
  debug() {},
  trace() {},
  fatal() {},
  silent() {},
  child() {
    return silent;
  },
} as unknown as FastifyBaseLogger;

const { freshLocation } = useStoreEngines('library');

/** The error `promise` rejects with, as status, code and param (and the message when asked). */
async function refusal(promise: Promise<unknown>): Promise<{ status: number; code: string; param: string | null; message: string }> {
  const err = await promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  const { status, code, param, message } = err as ApiError;
  return { status, code, param, message };
}

describe.each<StoreDialect>(['sqlite', 'postgres'])('library deployments on %s', (engine) => {
  let location: { dataDir: string; databaseUrl?: string };
  let modelsDir: string;
  const opened: Store[] = [];
  const services: LibraryService[] = [];
  let now: number;
  const clock = () => now;
  let store: Store;
  let library: LibraryService;

  /** One more connection to the test's store (a replica, or the host after a restart). */
  async function connect(): Promise<{ store: Store; library: LibraryService }> {
    const s = await openStore(location);
    expect(s.dialect).toBe(engine);
    opened.push(s);
    const l = new LibraryService(s.db, new ModelStore(s.db, clock), { modelsDir, cudaUnavailable: () => NO_GPU, engine: { contextLength: 256 } }, silent, clock);
    services.push(l);
    return { store: s, library: l };
  }

  /** Stops `l` as the host does on shutdown: waits for its loads, then unloads its instances. */
  async function shutDown(l: LibraryService): Promise<void> {
    await l.close();
    services.splice(services.indexOf(l), 1);
  }

  beforeEach(async () => {
    now = T0;
    location = await freshLocation(engine);
    modelsDir = tempDir('platform-library-models-');
    writeTinyChatModel(modelsDir, 'tiny-chat');
    writeTinyChatModel(modelsDir, 'other-chat', { seed: 5 });
    ({ store, library } = await connect());
  });
  afterEach(async () => {
    for (const l of services.splice(0)) await l.close();
    for (const s of opened.splice(0)) await s.close();
  });

  it('deploys a file as a model: PENDING at once, LIVE once loaded, with its model record', async () => {
    const dep = await library.deploy('tiny-chat', 'tiny', 'cpu', 2);
    const pending: LibraryDeployment = {
      modelId: 'tiny',
      name: 'tiny-chat',
      file: 'tiny-chat.gguf',
      license: null,
      licenseLink: null,
      instanceType: 'cpu',
      threads: 2,
      status: 'PENDING',
      reason: null,
      failureKind: null,
      replicas: null,
      speculative: null,
      draftModel: null,
      createdAt: T0,
      updatedAt: T0,
    };
    expect(dep).toEqual(pending);
    now = T0 + 1000;
    await library.idle();
    const live = { ...pending, status: 'LIVE', updatedAt: T0 + 1000 };
    expect(await library.get('tiny')).toEqual(live);
    expect(await library.find('tiny')).toEqual(live);
    expect(await library.resolve('tiny', 'model')).toEqual(live);
    expect(await library.list()).toEqual([live]);
    expect(library.liveInstances().map((l) => l.modelId)).toEqual(['tiny']);
    expect(library.instance('tiny').info.threads).toBe(2);
    expect(await library.serving('tiny')).toBe(library.instance('tiny'));
    await library.checkModel('tiny', 'model');
    expect(await new ModelStore(store.db).get('tiny')).toEqual({ id: 'tiny', project: 'library', description: 'tiny-chat (tiny-chat.gguf)', kind: 'library', createdAt: T0 });

    // A second connection (another replica) reads the same records.
    const other = await connect();
    expect(await other.library.list()).toEqual([live]);
    expect(await other.library.find('nope')).toBeUndefined();
  });

  it('refuses what cannot be deployed, and writes nothing for it', async () => {
    await library.deploy('tiny-chat', 'tiny', 'cpu', null);
    await library.idle();
    const models = new ModelStore(store.db, clock);
    await models.create('fraud', 'default', '', 'realtime');
    const before = await library.list();

    expect(await refusal(library.deploy('no-such-file', 'x', 'cpu', null))).toMatchObject({ status: 404, param: 'name' });
    expect(await refusal(library.deploy('other-chat', 'tiny', 'cpu', null))).toEqual({ status: 409, code: 'conflict', param: 'model_id', message: 'model "tiny" already exists' });
    expect(await refusal(library.deploy('other-chat', 'fraud', 'cpu', null))).toEqual({ status: 409, code: 'conflict', param: 'model_id', message: 'model "fraud" already exists' });
    expect(await refusal(library.deploy('tiny-chat', 'again', 'cpu', null))).toEqual({
      status: 409,
      code: 'conflict',
      param: 'name',
      message: '"tiny-chat" is already deployed as model "tiny"; deploy "tiny-chat.gguf" under another "name"',
    });
    // By its file name too.
    expect(await refusal(library.deploy('tiny-chat.gguf', 'again', 'cpu', null))).toMatchObject({ status: 409, param: 'name' });
    expect(await refusal(library.deploy('other-chat', 'models', 'cpu', null))).toMatchObject({ status: 400, code: 'invalid_argument', param: 'model_id' });
    expect(await refusal(library.deploy('other-chat', 'gpu', 'cuda', null))).toEqual({
      status: 400,
      code: 'invalid_argument',
      param: 'instance_type',
      message: `instance type cuda is not available on this host: ${NO_GPU}`,
    });
    await library.idle();
    expect(await library.list()).toEqual(before);
    expect((await models.list()).map((m) => m.id).sort()).toEqual(['fraud', 'tiny']);

    // Unknown and realtime models.
    expect(await refusal(library.get('nope'))).toEqual({ status: 404, code: 'not_found', param: 'model_id', message: 'library model "nope" is not deployed' });
    expect(await refusal(library.resolve('nope', 'model'))).toEqual({
      status: 404,
      code: 'not_found',
      param: 'model',
      message: 'model "nope" does not exist; GET /v1/models lists the models served here',
    });
    expect(await refusal(library.resolve('fraud', 'model'))).toEqual({
      status: 400,
      code: 'invalid_argument',
      param: 'model',
      message: 'model "fraud" is a realtime model; call /v1/fraud/predict',
    });
    expect(await refusal(library.checkModel('fraud', 'model_id'))).toMatchObject({ status: 400, param: 'model_id' });
    expect(await refusal(library.serving('nope'))).toMatchObject({ status: 404, param: 'model_id' });
    expect(await refusal(library.undeploy('nope'))).toEqual({ status: 404, code: 'not_found', param: 'model_id', message: 'library model "nope" is not deployed' });
    expect(await refusal(library.changeInstance('nope', 'cpu', 1))).toMatchObject({ status: 404, param: 'model_id' });
  });

  it('deploys two files with one general.name side by side, each under its own name (defect 9)', async () => {
    // Two "quantizations" of one model: files of their own, general.name "twin" in both.
    for (const [file, seed] of [['twin-q4.gguf', 7], ['twin-q8.gguf', 8]] as const) {
      fs.renameSync(path.join(modelsDir, writeTinyChatModel(modelsDir, 'twin', { seed })), path.join(modelsDir, file));
    }
    // general.name names neither: a 400 listing the files.
    expect(await refusal(library.deploy('twin', 'x', 'cpu', null, null, null, 'file'))).toEqual({
      status: 400,
      code: 'invalid_argument',
      param: 'file',
      message: '"twin" names 2 files in MODELS_DIR (twin-q4.gguf, twin-q8.gguf); name the file to deploy',
    });
    // The default name is the file name without .gguf; a file is named with or without .gguf.
    expect(await library.deploy('twin-q4.gguf', 'q4', 'cpu', null)).toMatchObject({ modelId: 'q4', name: 'twin-q4', file: 'twin-q4.gguf' });
    expect(await library.deploy('twin-q8', 'q8', 'cpu', null, null, 'twin, 8 bits', 'file')).toMatchObject({ modelId: 'q8', name: 'twin, 8 bits', file: 'twin-q8.gguf' });
    // The same file once more under a name of its own; a name taken is a 409 naming its holder.
    expect(await library.deploy('twin-q4.gguf', 'q4-again', 'cpu', null, null, 'twin-q4 again', 'file')).toMatchObject({ name: 'twin-q4 again', file: 'twin-q4.gguf' });
    expect(await refusal(library.deploy('tiny-chat', 'tiny', 'cpu', null, null, 'twin, 8 bits', 'file'))).toEqual({
      status: 409,
      code: 'conflict',
      param: 'name',
      message: '"twin, 8 bits" is already deployed as model "q8"',
    });
    expect(await refusal(library.deploy('twin-q4.gguf', 'q4-third', 'cpu', null))).toMatchObject({ status: 409, param: 'name', message: '"twin-q4" is already deployed as model "q4"; deploy "twin-q4.gguf" under another "name"' });
    for (const bad of ['', ' padded', 'tab\there', 'x'.repeat(256)]) {
      expect(await refusal(library.deploy('tiny-chat', 'tiny', 'cpu', null, null, bad, 'file'))).toMatchObject({ status: 400, param: 'name' });
    }
    expect(await refusal(library.deploy('no-such', 'tiny', 'cpu', null, null, 'fine', 'file'))).toMatchObject({ status: 404, param: 'file' });
    await library.idle();
    expect((await library.list()).map((d) => `${d.modelId}=${d.name} ${d.status}`).sort()).toEqual(['q4-again=twin-q4 again LIVE', 'q4=twin-q4 LIVE', 'q8=twin, 8 bits LIVE']);
    expect(Object.fromEntries(await library.generalNames(await library.list()))).toEqual({ q4: 'twin', q8: 'twin', 'q4-again': 'twin' });
    expect(library.liveInstances().map((l) => l.modelId).sort()).toEqual(['q4', 'q4-again', 'q8']);
    expect(await new ModelStore(store.db).get('q8')).toMatchObject({ description: 'twin (twin-q8.gguf)' });
    // The names stay after a restart.
    const after = await connect();
    await after.library.restore();
    await after.library.whenRestored();
    expect((await after.library.list()).map((d) => `${d.modelId}=${d.name}`).sort()).toEqual(['q4-again=twin-q4 again', 'q4=twin-q4', 'q8=twin, 8 bits']);
    expect(after.library.liveInstances().map((l) => l.modelId).sort()).toEqual(['q4', 'q4-again', 'q8']);
  });

  it('refuses the second of two deploys of one file or one id through one connection', async () => {
    // Either may be the one that wins: on PostgreSQL they run on two pooled connections, and on
    // SQLite the file checks before the transaction interleave with it.
    const outcomes = await Promise.allSettled([library.deploy('tiny-chat', 'one', 'cpu', null), library.deploy('tiny-chat', 'two', 'cpu', null)]);
    const won = outcomes.findIndex((o) => o.status === 'fulfilled');
    const lost = outcomes[1 - won]!;
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const winner = won === 0 ? 'one' : 'two';
    expect(lost.status === 'rejected' && (lost.reason as ApiError).message).toBe(`"tiny-chat" is already deployed as model "${winner}"; deploy "tiny-chat.gguf" under another "name"`);
    const [c, d] = await Promise.allSettled([library.deploy('other-chat', 'same', 'cpu', null), library.deploy('other-chat', 'same', 'cpu', null)]);
    expect([c, d].filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const refused = [c, d].find((o) => o.status === 'rejected') as PromiseRejectedResult;
    // Both statements are true of the loser; which one it meets depends on when the winner commits
    // between the loser's two checks (read committed on PostgreSQL).
    expect(['model "same" already exists', '"other-chat" is already deployed as model "same"; deploy "other-chat.gguf" under another "name"']).toContain((refused.reason as ApiError).message);
    expect((refused.reason as ApiError).status).toBe(409);
    await library.idle();
    const listed = (await library.list()).map((x) => `${x.modelId} ${x.status}`).sort();
    expect(listed).toEqual([`${winner} LIVE`, 'same LIVE'].sort());
  });

  it('changes the instance of a LIVE model, one change at a time', async () => {
    await library.deploy('tiny-chat', 'tiny', 'cpu', null);
    expect(await refusal(library.changeInstance('tiny', 'cpu', 1))).toMatchObject({ status: 409, param: 'model_id' }); // not LIVE yet
    await library.idle();
    const first = library.instance('tiny');
    expect(await refusal(library.changeInstance('tiny', 'cuda', null))).toMatchObject({ status: 400, param: 'instance_type' });
    now = T0 + 5000;
    // Either request may be first past the check (their reads of the record race): one switches,
    // the other is refused.
    const outcomes = await Promise.allSettled([library.changeInstance('tiny', 'cpu', 1), library.changeInstance('tiny', 'cpu', 3)]);
    const won = outcomes.findIndex((o) => o.status === 'fulfilled');
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const lost = outcomes[1 - won]!;
    expect(lost.status === 'rejected' && (lost.reason as ApiError).message).toBe('model "tiny" is already switching to cpu');
    const threads = won === 0 ? 1 : 3;
    await library.idle();
    expect(library.pendingInstance.has('tiny')).toBe(false);
    expect(library.instance('tiny')).not.toBe(first);
    expect(library.instance('tiny').info.threads).toBe(threads);
    expect(await library.get('tiny')).toMatchObject({ instanceType: 'cpu', threads, status: 'LIVE', updatedAt: T0 + 5000 });
  });

  it('undeploys: both records go, the instance is unloaded, and a second undeploy is a 404', async () => {
    await library.deploy('tiny-chat', 'tiny', 'cpu', null);
    await library.idle();
    await library.undeploy('tiny');
    expect(await library.list()).toEqual([]);
    expect(await new ModelStore(store.db).find('tiny')).toBeUndefined();
    expect(library.liveInstances()).toEqual([]);
    expect(await refusal(library.serving('tiny'))).toMatchObject({ status: 404 });
    expect(await refusal(library.undeploy('tiny'))).toMatchObject({ status: 404 });
    // The file and the id are free again.
    await library.deploy('tiny-chat', 'tiny', 'cpu', null);
    await library.idle();
    expect((await library.get('tiny')).status).toBe('LIVE');
  });

  it('frees a model undeployed while it loads instead of making it live', async () => {
    await library.deploy('tiny-chat', 'tiny', 'cpu', null);
    while ((await library.get('tiny')).status === 'PENDING') await new Promise((resolve) => setImmediate(resolve));
    await library.undeploy('tiny');
    await library.idle();
    expect(library.liveInstances()).toEqual([]);
    expect(await library.list()).toEqual([]);
  });

  it('at restart: reloads LIVE ones, carries on interrupted ones, and retries a missing file once per start', async () => {
    await library.deploy('tiny-chat', 'tiny', 'cpu', null);
    await library.deploy('other-chat', 'other', 'cpu', null);
    await library.idle();
    // Rows as a host stopped halfway, or after a broken file, would have left them.
    await new ModelStore(store.db, clock).create('halfway', 'library', '', 'library');
    await new ModelStore(store.db, clock).create('broken', 'library', '', 'library');
    const row = { file: 'x.gguf', license: null, license_link: null, instance_type: 'cpu' as const, threads: null, created_at: T0 + 1, updated_at: T0 + 1 };
    // Halfway through loading other-chat's file again, as a second model: carried on at the start.
    await store.db.insertInto('library_deployments').values({ ...row, file: 'other-chat.gguf', model_id: 'halfway', name: 'halfway', status: 'DEPLOYING', reason: null, failure_kind: null }).execute();
    await store.db.insertInto('library_deployments').values({ ...row, model_id: 'broken', name: 'broken', status: 'FAILED', reason: 'bad magic', failure_kind: 'load_error' }).execute();
    await shutDown(library);

    // Start without tiny-chat's file.
    const aside = path.join(tempDir(), 'tiny-chat.gguf');
    fs.renameSync(path.join(modelsDir, 'tiny-chat.gguf'), aside);
    now = T0 + 10_000;
    let host = await connect();
    await host.library.restore();
    await host.library.whenRestored();
    await host.library.idle();
    const reason = `the model file "tiny-chat.gguf" is missing from MODELS_DIR (${modelsDir}); put it back and restart the host, which tries again at start-up, or undeploy the model`;
    const statuses = async (l: LibraryService) => Object.fromEntries((await l.list()).map((d) => [d.modelId, [d.status, d.failureKind, d.reason]]));
    expect(await statuses(host.library)).toEqual({
      tiny: ['FAILED', 'missing_file', reason],
      other: ['LIVE', null, null],
      halfway: ['LIVE', null, null],
      broken: ['FAILED', 'load_error', 'bad magic'],
    });
    expect([...host.library.triedAtStart].sort()).toEqual(['halfway', 'other', 'tiny']);
    expect(await refusal(host.library.serving('tiny'))).toEqual({
      status: 503,
      code: 'unavailable',
      param: null,
      message: 'model "tiny" failed to load; its deployment status (GET /api/v1/library/deployments/tiny) says why',
    });
    expect(() => host.library.instance('tiny')).toThrow(ApiError);
    expect(await host.library.serving('other')).toBe(host.library.instance('other'));
    await shutDown(host.library);

    // Still missing at the next start: tried again, FAILED again with the same reason.
    host = await connect();
    await host.library.restore();
    await host.library.whenRestored();
    expect((await host.library.get('tiny')).failureKind).toBe('missing_file');
    expect(host.library.triedAtStart.has('tiny')).toBe(true);
    await shutDown(host.library);

    // Back: LIVE by itself at the next start; the broken one is not retried.
    fs.renameSync(aside, path.join(modelsDir, 'tiny-chat.gguf'));
    host = await connect();
    await host.library.restore();
    await host.library.whenRestored();
    expect(await statuses(host.library)).toEqual({
      tiny: ['LIVE', null, null],
      other: ['LIVE', null, null],
      halfway: ['LIVE', null, null],
      broken: ['FAILED', 'load_error', 'bad magic'],
    });
    expect(host.library.liveInstances().map((l) => l.modelId).sort()).toEqual(['halfway', 'other', 'tiny']);
  });
});

describe('two replicas on one PostgreSQL store', () => {
  let databaseUrl: string;
  let modelsDir: string;
  const opened: Store[] = [];
  const services: LibraryService[] = [];

  async function replica(): Promise<LibraryService> {
    const store = await openStore({ dataDir: tempDir('platform-library-'), databaseUrl });
    opened.push(store);
    const library = new LibraryService(store.db, new ModelStore(store.db), { modelsDir, cudaUnavailable: () => NO_GPU, engine: { contextLength: 256 } }, silent);
    services.push(library);
    return library;
  }

  beforeEach(async () => {
    databaseUrl = (await freshLocation('postgres')).databaseUrl!;
    modelsDir = tempDir('platform-library-models-');
    writeTinyChatModel(modelsDir, 'tiny-chat');
    writeTinyChatModel(modelsDir, 'other-chat', { seed: 5 });
  });
  afterEach(async () => {
    for (const l of services.splice(0)) await l.close();
    for (const s of opened.splice(0)) await s.close();
  });

  /** The settled results of `a` and `b`, run at once: exactly one fulfilled; the rejection. */
  async function oneWins(a: Promise<unknown>, b: Promise<unknown>): Promise<ApiError> {
    const results = await Promise.allSettled([a, b]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')!.reason;
    expect(lost).toBeInstanceOf(ApiError);
    return lost as ApiError;
  }

  it('deploy the same file at once: one wins, the other gets the 409', async () => {
    const [a, b] = [await replica(), await replica()];
    for (let round = 0; round < 5; round++) {
      const lost = await oneWins(a.deploy('tiny-chat', `one${round}`, 'cpu', null), b.deploy('tiny-chat', `two${round}`, 'cpu', null));
      expect(lost.status).toBe(409);
      expect(lost.param).toBe('name');
      expect(lost.message).toMatch(new RegExp(`^"tiny-chat" is already deployed as model "(one|two)${round}"; deploy "tiny-chat\\.gguf" under another "name"$`));
      const deployed = await a.list();
      expect(deployed).toHaveLength(1);
      expect(lost.message).toContain(`"${deployed[0]!.modelId}"`);
      await Promise.all([a.idle(), b.idle()]);
      // The loser wrote no model record.
      const loser = deployed[0]!.modelId.startsWith('one') ? `two${round}` : `one${round}`;
      expect(await a.find(loser)).toBeUndefined();
      expect(await refusal(b.resolve(loser, 'model'))).toMatchObject({ status: 404 });
      // Undeploy at once from both: one 204, one 404.
      const gone = await oneWins(a.undeploy(deployed[0]!.modelId), b.undeploy(deployed[0]!.modelId));
      expect(gone.status).toBe(404);
      expect(await a.list()).toEqual([]);
    }
  });

  it('deploy the same model id at once: one wins, the other gets the 409', async () => {
    const [a, b] = [await replica(), await replica()];
    const lost = await oneWins(a.deploy('tiny-chat', 'same', 'cpu', null), b.deploy('other-chat', 'same', 'cpu', null));
    expect({ status: lost.status, param: lost.param, message: lost.message }).toEqual({ status: 409, param: 'model_id', message: 'model "same" already exists' });
    await Promise.all([a.idle(), b.idle()]);
    expect((await b.list()).map((d) => [d.modelId, d.status])).toEqual([['same', 'LIVE']]);
  });
});
