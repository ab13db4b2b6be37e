// The realtime control plane's stores on both engines of the store (SQLite in DATA_DIR, and
// PostgreSQL at a URL, test/helpers/postgres.ts): the same operations give the same records and
// the same refusals; uploaded builds reach a second replica (PostgreSQL: from the build_blobs
// table, cached in that replica's DATA_DIR and checked by sha256); and the check-then-write steps
// (a deployment unless one is in progress, LIVE unless failed meanwhile, an audience deleted unless
// in use) end, when two replicas on PostgreSQL race, as they would one after the other.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ApiError, conflict, invalidArgument } from '../src/errors.js';
import { ModelStore } from '../src/models/store.js';
import { AudienceStore } from '../src/realtime/audiences.js';
import { BuildStore } from '../src/realtime/builds.js';
import { DeploymentStore, type LaunchState, type NewDeployment } from '../src/realtime/deployments.js';
import { createRealtime, type Realtime } from '../src/realtime/service.js';
import type { TrafficConfig } from '../src/realtime/traffic.js';
import { openStore, type Store } from '../src/store/store.js';
import { ConfigSync } from '../src/cluster/config-sync.js';
import { ReplicaDirectory } from '../src/cluster/replicas.js';
import { linearModel } from './helpers/models.js';
import { tempDir } from './helpers/paths.js';
import { usePostgres } from './helpers/store-engines.js';

type Engine = 'sqlite' | 'postgres';

const server = usePostgres();

/** A clock that moves 1 ms per reading, so that orderings by time never tie. */
function ticking(start = 1_795_000_000_000): () => number {
  let t = start;
  return () => t++;
}

interface Replica {
  store: Store;
  dataDir: string;
  models: ModelStore;
  builds: BuildStore;
  deployments: DeploymentStore;
  audiences: AudienceStore;
}

/**
 * One store of record and the replicas that open it. On PostgreSQL each replica is a connection
 * pool with a DATA_DIR of its own; on SQLite the store is the DATA_DIR, so a second replica is a
 * second connection to the same file.
 */
async function cluster(engine: Engine, name: string) {
  const sqliteDir = tempDir();
  const url = engine === 'postgres' ? await server().createDatabase(name) : undefined;
  const open: Replica[] = [];
  const closers: Array<() => Promise<void>> = [];
  const clock = ticking();
  let replicaCount = 0;
  return {
    async replica(): Promise<Replica> {
      const dataDir = engine === 'postgres' ? tempDir() : sqliteDir;
      const store = await openStore({ dataDir, databaseUrl: url });
      const deployments = new DeploymentStore(store.db, clock);
      const replica: Replica = {
        store,
        dataDir,
        models: new ModelStore(store.db, clock),
        builds: new BuildStore(store.db, dataDir, clock),
        deployments,
        audiences: new AudienceStore(store.db, (trx) => deployments.audiencesInUse(trx), clock),
      };
      open.push(replica);
      return replica;
    },
    /** What a realtime service over its own connection sees (the deployer, registry, predict path). */
    async realtime(): Promise<{ realtime: Realtime; store: Store; dataDir: string; sync: ConfigSync }> {
      const dataDir = engine === 'postgres' ? tempDir() : sqliteDir;
      const store = await openStore({ dataDir, databaseUrl: url });
      const config = loadConfig({ DATA_DIR: dataDir, PORT: '0' });
      const log = pino({ level: 'silent' });
      const realtime = await createRealtime({ db: store.db, config, clock, metrics: new Registry(), log, cudaUnavailable: () => 'not in this test' });
      // The replica's snapshot, as the app keeps it (src/server/app.ts), without the LISTEN
      // connection: the test pokes each replica instead (`settle`).
      const replicas = new ReplicaDirectory(store.db, { id: `replica-${++replicaCount}`, address: 'http://127.0.0.1:1' }, 5000);
      const sync = new ConfigSync({
        db: store.db,
        replicas,
        parts: [realtime.audiences.snapshotPart, realtime.deployer.snapshotPart],
        load: () => ({ ...realtime.deployer.load(), library: [] }),
        pollMs: 50,
        heartbeatMs: 200,
        log,
      });
      realtime.deployer.changed = () => sync.poke();
      await sync.start();
      closers.push(async () => {
        await sync.stop();
        await realtime.close();
        await store.close();
      });
      return { realtime, store, dataDir, sync };
    },
    async close() {
      for (const c of closers.splice(0).reverse()) await c();
      await Promise.all(open.splice(0).map((r) => r.store.close()));
    },
  };
}

/** Runs `test` on a fresh cluster and closes every replica after it, whatever happens. */
async function withCluster(engine: Engine, name: string, test: (c: Awaited<ReturnType<typeof cluster>>) => Promise<void>): Promise<void> {
  const c = await cluster(engine, name);
  try {
    await test(c);
  } finally {
    await c.close();
  }
}

/**
 * Waits until no deployment is on its way and every replica has applied the newest configuration
 * and finished reading it: what the replicas' notifications and timers reach by themselves.
 */
async function settle(...replicas: Array<{ store: Store; sync: ConfigSync }>): Promise<void> {
  const db = replicas[0]!.store.db;
  for (;;) {
    await Promise.all(replicas.map((r) => r.sync.idle()));
    const busy = await db.selectFrom('deployments').select('id').where('status', 'in', ['PENDING', 'DEPLOYING']).execute();
    const { version } = await db.selectFrom('config_version').select('version').executeTakeFirstOrThrow();
    if (busy.length === 0 && replicas.every((r) => r.sync.applied >= Number(version))) return;
    for (const r of replicas) r.sync.poke();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Two replicas of `c`, the model "fraud" and one build of it: the start of every race. */
async function twoReplicasWithABuild(c: Awaited<ReturnType<typeof cluster>>) {
  const a = await c.replica();
  const b = await c.replica();
  await a.models.create('fraud', 'default', '');
  const build = await a.builds.create('fraud', linearModel(FEATURES, 1), { featureNames: FEATURES });
  return { a, b, build };
}

/** The ApiError a promise rejects with, as status, code-free message and field. */
async function refusal(work: Promise<unknown>): Promise<{ status: number; message: string; param: string | null }> {
  try {
    await work;
  } catch (err) {
    if (err instanceof ApiError) return { status: err.status, message: err.message, param: err.param ?? null };
    throw err;
  }
  throw new Error('expected a refusal');
}

const sha256 = (bytes: Uint8Array) => crypto.createHash('sha256').update(bytes).digest('hex');

const FEATURES = ['a', 'b'];

const traffic = (buildId: string, audiences: TrafficConfig['audiences'] = []): TrafficConfig => ({
  variations: { default: buildId },
  audiences,
  fallbackVariation: 'default',
  instanceTypes: { default: 'cpu' },
});

/** What the deployer decides for a plain deploy: refuse while busy, else deploy `buildId`. */
const deployDecision =
  (buildId: string, audienceIds: string[] = []) =>
  ({ inProgress, audienceExists }: LaunchState): NewDeployment => {
    if (inProgress) throw conflict(`busy with ${inProgress.id}`, 'model_id');
    for (const id of audienceIds) if (!audienceExists(id)) throw invalidArgument(`audience "${id}" does not exist`, 'audience_id');
    return {
      action: 'deploy',
      variationName: 'default',
      buildId,
      instanceType: 'cpu',
      traffic: traffic(buildId, audienceIds.map((id) => ({ id, routes: [{ variation_name: 'default', weight: 100, shadow: false }] }))),
    };
  };

describe.each<Engine>(['sqlite', 'postgres'])('the realtime stores on %s', (engine) => {
  let seq = 0;
  const db = () => `realtime_${engine}_${++seq}`;

  it('models: create, find, get, list, and the refusals', async () => {
    await withCluster(engine, db(), async (c) => {
      const a = await c.replica();
      const b = await c.replica();
      const fraud = await a.models.create('fraud', 'risk', 'card fraud');
      await a.models.create('churn', 'default', '');
      await a.models.create('tiny', 'library', 'a GGUF', 'library');
      expect(fraud).toMatchObject({ id: 'fraud', project: 'risk', description: 'card fraud', kind: 'realtime' });
      expect(await b.models.get('fraud')).toEqual(fraud);
      expect(await b.models.find('ghost')).toBeUndefined();
      expect((await b.models.list()).map((m) => m.id)).toEqual(['fraud', 'churn', 'tiny']);
      expect((await b.models.list('default')).map((m) => m.id)).toEqual(['churn']);
      expect(await refusal(b.models.get('ghost'))).toEqual({ status: 404, message: 'model "ghost" does not exist', param: 'model_id' });
      expect(await refusal(b.models.create('fraud', 'other', ''))).toEqual({ status: 409, message: 'model "fraud" already exists', param: 'model_id' });
      expect((await refusal(b.models.create('x', 'library', ''))).status).toBe(400);
      expect((await refusal(b.models.create('chat', 'default', ''))).param).toBe('model_id');
      // Two replicas creating one id at once: the primary key decides, one 409.
      const raced = await Promise.allSettled([a.models.create('same', 'p', 'from a'), b.models.create('same', 'p', 'from b')]);
      expect(raced.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const lost = raced.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect((lost.reason as ApiError).status).toBe(409);
      // Inside a caller's transaction: rolled back with it.
      await expect(
        a.store.db.transaction().execute(async (trx) => {
          await a.models.create('rolled', 'p', '', 'realtime', trx);
          throw new Error('caller fails');
        }),
      ).rejects.toThrow('caller fails');
      expect(await a.models.find('rolled')).toBeUndefined();
    });
  });

  it('builds: stored, listed, refused when malformed, and read back by a second replica', async () => {
    await withCluster(engine, db(), async (c) => {
      const a = await c.replica();
      await a.models.create('fraud', 'default', '');
      const bytes = linearModel(FEATURES, 0.5);
      const build = await a.builds.create('fraud', bytes, { featureNames: FEATURES });
      expect(build).toMatchObject({ modelId: 'fraud', sha256: sha256(bytes), sizeBytes: bytes.byteLength, features: [{ name: 'a', type: 'float' }, { name: 'b', type: 'float' }], outputs: ['y'] });
      const again = await a.builds.create('fraud', bytes, { featureNames: FEATURES });
      expect(await a.builds.list('fraud')).toEqual([build, again]);
      expect(await refusal(a.builds.get('other', build.id))).toEqual({ status: 404, message: `model "other" has no build "${build.id}"`, param: 'build_id' });
      expect((await refusal(a.builds.create('fraud', new Uint8Array([1, 2, 3]), {}))).status).toBe(400);
      expect(await a.builds.list('fraud')).toHaveLength(2);

      const rows = await a.store.db.selectFrom('builds').select(['id', 'file']).orderBy('created_at').execute();
      const blobs = await a.store.db.selectFrom('build_blobs').select(['sha256', 'size_bytes']).execute();
      if (engine === 'sqlite') {
        // As before: one file per build under DATA_DIR, and no blobs.
        expect(rows.map((r) => r.file)).toEqual([path.join('builds', 'fraud', `${build.id}.onnx`), path.join('builds', 'fraud', `${again.id}.onnx`)]);
        expect(blobs).toEqual([]);
      } else {
        // Content-addressed: the same bytes twice are one blob and one cache file.
        expect(blobs).toEqual([{ sha256: build.sha256, size_bytes: bytes.byteLength }]);
        expect(new Set(rows.map((r) => r.file))).toEqual(new Set([path.join('builds', 'sha256', `${build.sha256}.onnx`)]));
      }

      const b = await c.replica();
      const prepared = await b.builds.prepare(build.id);
      expect(prepared.record).toEqual(build);
      expect(prepared.schema.features.map((f) => f.name)).toEqual(FEATURES);
      expect(await refusal(b.builds.prepare('bld_0000000000000000'))).toMatchObject({ status: 404 });
      if (engine === 'postgres') {
        // Replica b started with an empty DATA_DIR: the bytes came from the database and are cached.
        const cache = path.join(b.dataDir, 'builds', 'sha256', `${build.sha256}.onnx`);
        expect(b.dataDir).not.toBe(a.dataDir);
        expect(sha256(fs.readFileSync(cache))).toBe(build.sha256);
        // A cache file that does not match its sha256 is fetched again and replaced.
        fs.writeFileSync(cache, Buffer.from('not the model'));
        expect((await b.builds.prepare(build.id)).record).toEqual(build);
        expect(sha256(fs.readFileSync(cache))).toBe(build.sha256);
        fs.writeFileSync(cache, bytes.subarray(0, 10));
        await b.builds.prepare(again.id);
        expect(fs.readFileSync(cache).equals(Buffer.from(bytes))).toBe(true);
      }
    });
  });

  it('audiences: all or none, update, delete, predicates from memory, and the in-use refusal', async () => {
    await withCluster(engine, db(), async (c) => {
      const a = await c.replica();
      const gold = { name: 'gold', description: 'gold tier', conditions: { unary: [{ key: 'X-Tier', operator: 'UNARY_OPERATOR_TYPE_EXACT_MATCH', operand: 'gold' }] } };
      const refused = await refusal(a.audiences.createMany([gold, { name: '' }]));
      expect(refused).toMatchObject({ status: 400, param: 'spec.audiences[1].name' });
      expect(await a.audiences.list()).toEqual([]);
      const [g, all] = await a.audiences.createMany([gold, { name: 'everyone' }]);
      expect(g).toMatchObject({ name: 'gold', description: 'gold tier', conditions: { unary: [{ key: 'x-tier', operator: 'UNARY_OPERATOR_TYPE_EXACT_MATCH', operand: 'gold' }], binary: [] } });
      // One time for the whole file, so the list orders them by id.
      expect((await a.audiences.list()).map((x) => x.id)).toEqual([g!.id, all!.id].sort());

      // Routing reads compiled predicates from memory: none until loaded, then kept by updates.
      expect(a.audiences.predicate(g!.id)({ 'x-tier': 'gold' })).toBe(false);
      await a.audiences.load([g!.id, 'aud_missing']);
      expect(a.audiences.predicate(g!.id)({ 'x-tier': 'gold' })).toBe(true);
      expect(a.audiences.predicate('aud_missing')({})).toBe(false);
      const updated = await a.audiences.update(g!.id, { name: 'gold', conditions: { unary: [{ key: 'x-tier', operator: 'UNARY_OPERATOR_TYPE_EXACT_MATCH', operand: 'platinum' }] } });
      expect(updated.updatedAt).toBeGreaterThan(g!.updatedAt);
      expect(a.audiences.predicate(g!.id)({ 'x-tier': 'gold' })).toBe(false);
      expect(a.audiences.predicate(g!.id)({ 'x-tier': 'platinum' })).toBe(true);
      expect(await refusal(a.audiences.update('aud_0000000000000000', { name: 'x' }))).toMatchObject({ status: 404, param: 'audience_id' });

      await a.models.create('fraud', 'default', '');
      const build = await a.builds.create('fraud', linearModel(FEATURES, 1), { featureNames: FEATURES });
      await a.deployments.launch('fraud', [g!.id], deployDecision(build.id, [g!.id]));
      expect(await a.deployments.audiencesInUse()).toEqual(new Set([g!.id]));
      expect(await refusal(a.audiences.delete(g!.id))).toEqual({ status: 409, message: `audience "${g!.id}" is used by a deployment; deploy without it first`, param: 'audience_id' });
      await a.audiences.delete(all!.id);
      expect(await refusal(a.audiences.delete(all!.id))).toMatchObject({ status: 404 });
      expect((await a.audiences.list()).map((x) => x.id)).toEqual([g!.id]);
    });
  });

  it('deployments: PENDING, busy, DEPLOYING, LIVE superseding, FAILED', async () => {
    await withCluster(engine, db(), async (c) => {
      const a = await c.replica();
      await a.models.create('fraud', 'default', '');
      const b1 = await a.builds.create('fraud', linearModel(FEATURES, 1), { featureNames: FEATURES });
      const b2 = await a.builds.create('fraud', linearModel(FEATURES, 2), { featureNames: FEATURES });
      expect(await refusal(a.deployments.launch('ghost', [], deployDecision(b1.id)))).toMatchObject({ status: 404, param: 'model_id' });

      const first = await a.deployments.launch('fraud', [], deployDecision(b1.id));
      expect(first).toMatchObject({ modelId: 'fraud', action: 'deploy', status: 'PENDING', reason: null, variationName: 'default', buildId: b1.id, instanceType: 'cpu', traffic: traffic(b1.id) });
      expect(await a.deployments.get(first.id)).toEqual(first);
      expect(await refusal(a.deployments.launch('fraud', [], deployDecision(b2.id)))).toMatchObject({ status: 409, message: `busy with ${first.id}` });
      expect(await a.deployments.goLive(first.id, 'fraud')).toBe(false); // not DEPLOYING yet
      expect(await a.deployments.setStatus(first.id, 'DEPLOYING')).toBe(true);
      expect(await a.deployments.inProgress('fraud')).toMatchObject({ id: first.id, status: 'DEPLOYING' });
      expect(await a.deployments.goLive(first.id, 'fraud')).toBe(true);
      expect(await a.deployments.live('fraud')).toMatchObject({ id: first.id, status: 'LIVE' });

      const second = await a.deployments.launch('fraud', [], deployDecision(b2.id));
      await a.deployments.setStatus(second.id, 'DEPLOYING');
      expect(await a.deployments.goLive(second.id, 'fraud')).toBe(true);
      const third = await a.deployments.launch('fraud', [], deployDecision(b1.id));
      await a.deployments.setStatus(third.id, 'DEPLOYING');
      expect(await a.deployments.setStatus(third.id, 'FAILED', 'no luck')).toBe(true);
      expect(await a.deployments.setStatus(third.id, 'DEPLOYING')).toBe(false);
      const fourth = await a.deployments.launch('fraud', [], deployDecision(b1.id));
      expect(await a.deployments.goLive(fourth.id, 'fraud')).toBe(false);

      const b = await c.replica();
      expect((await b.deployments.list('fraud')).map((d) => [d.id, d.status, d.reason])).toEqual([
        [first.id, 'SUPERSEDED', null],
        [second.id, 'LIVE', null],
        [third.id, 'FAILED', 'no luck'],
        [fourth.id, 'PENDING', null],
      ]);
      expect((await b.deployments.allLive()).map((d) => d.id)).toEqual([second.id]);
      expect((await b.deployments.current()).map((d) => d.id)).toEqual([second.id, fourth.id]);
      expect(await refusal(b.deployments.get('dep_0000000000000000'))).toMatchObject({ status: 404, param: 'deployment_id' });
    });
  });

  it('a deployment through one replica loads on another, from the store of record', async () => {
    await withCluster(engine, db(), async (c) => {
      const one = await c.realtime();
      await one.realtime.models.create('fraud', 'default', '');
      const bytes = linearModel(FEATURES, 3);
      const build = await one.realtime.builds.create('fraud', bytes, { featureNames: FEATURES });
      const dep = await one.realtime.deployer.deploy({ modelId: 'fraud', buildId: build.id });
      await settle(one);
      expect(await one.realtime.deployments.get(dep.id)).toMatchObject({ status: 'LIVE' });
      expect(await refusal(one.realtime.deployer.deploy({ modelId: 'fraud', buildId: build.id, instanceType: 'cuda' }))).toMatchObject({ status: 400, param: 'instance_type' });

      // A second replica serves the live deployment from its first snapshot (on PostgreSQL, with an empty DATA_DIR).
      const two = await c.realtime();
      const live = two.realtime.registry.get('fraud');
      expect(live?.deploymentId).toBe(dep.id);
      const ask = (r: Realtime) =>
        r.predict.predict({ modelId: 'fraud', variation: undefined, headers: {}, body: { columns: FEATURES, data: [[1, 2]] }, requestId: 'r1', log: pino({ level: 'silent' }) });
      expect((await ask(two.realtime)).rows).toEqual((await ask(one.realtime)).rows);
      if (engine === 'postgres') expect(fs.existsSync(path.join(two.dataDir, 'builds', 'sha256', `${build.sha256}.onnx`))).toBe(true);
      // A model that is not live here says why (the only predict that reads the database).
      await one.realtime.models.create('idle', 'default', '');
      const idle = one.realtime.predict.predict({ modelId: 'idle', variation: undefined, headers: {}, body: { columns: FEATURES, data: [[1, 2]] }, requestId: 'r2', log: pino({ level: 'silent' }) });
      expect(await refusal(idle)).toEqual({ status: 503, message: 'model "idle" is not live: no variation is deployed', param: null });
    });
  });
});

describe('two replicas racing on one PostgreSQL database end as if they took turns', () => {
  it('deploying one model: one deployment recorded, the other refused as busy', async () => {
    await withCluster('postgres', 'race_deploy', async (c) => {
      const { a, b, build } = await twoReplicasWithABuild(c);
      for (let round = 0; round < 10; round++) {
        const raced = await Promise.allSettled([a.deployments.launch('fraud', [], deployDecision(build.id)), b.deployments.launch('fraud', [], deployDecision(build.id))]);
        const won = raced.filter((r): r is PromiseFulfilledResult<Awaited<ReturnType<DeploymentStore['launch']>>> => r.status === 'fulfilled');
        expect(won).toHaveLength(1);
        expect(((raced.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason as ApiError).status).toBe(409);
        const pending = await a.store.db.selectFrom('deployments').select('id').where('status', 'in', ['PENDING', 'DEPLOYING']).execute();
        expect(pending.map((p) => p.id)).toEqual([won[0]!.value.id]);
        await a.deployments.setStatus(won[0]!.value.id, 'FAILED', 'cleared for the next round');
      }
    });
  });

  it('through the deployer: one 202, one 409, and the winner goes live on both replicas', async () => {
    await withCluster('postgres', 'race_deployer', async (c) => {
      const one = await c.realtime();
      const two = await c.realtime();
      await one.realtime.models.create('fraud', 'default', '');
      const build = await one.realtime.builds.create('fraud', linearModel(FEATURES, 1), { featureNames: FEATURES });
      const raced = await Promise.allSettled([one.realtime.deployer.deploy({ modelId: 'fraud', buildId: build.id }), two.realtime.deployer.deploy({ modelId: 'fraud', buildId: build.id })]);
      await settle(one, two);
      const deployments = await one.realtime.deployments.list('fraud');
      const live = deployments.find((d) => d.status === 'LIVE')!;
      if (raced.every((r) => r.status === 'fulfilled')) {
        // On a loaded machine the first may go live before the second begins: they took turns.
        expect(deployments.map((d) => d.status).sort()).toEqual(['LIVE', 'SUPERSEDED']);
      } else {
        expect(raced.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
        expect(deployments.map((d) => d.status)).toEqual(['LIVE']);
      }
      // LIVE once both replicas loaded it, and then served by both.
      const servedBy = [one, two].filter((r) => r.realtime.registry.get('fraud')?.deploymentId === live.id);
      expect(servedBy).toHaveLength(2);
    });
  });

  it('going live against another replica failing the deployment: LIVE and untouched, or FAILED', async () => {
    await withCluster('postgres', 'race_golive', async (c) => {
      const { a, b, build } = await twoReplicasWithABuild(c);
      let everLive = false;
      for (let round = 0; round < 10; round++) {
        const dep = await a.deployments.launch('fraud', [], deployDecision(build.id));
        await a.deployments.setStatus(dep.id, 'DEPLOYING');
        // b could not load the build: it fails the deployment while a makes it LIVE.
        const [wentLive, failed] = await Promise.all([a.deployments.goLive(dep.id, 'fraud'), b.deployments.setStatus(dep.id, 'FAILED', 'did not load on b')]);
        everLive ||= wentLive;
        const status = (await a.deployments.get(dep.id)).status;
        if (wentLive) expect([status, failed]).toEqual(['LIVE', false]);
        else expect([status, failed]).toEqual(['FAILED', true]);
        expect(await a.store.db.selectFrom('deployments').select('id').where('status', '=', 'LIVE').execute()).toHaveLength(everLive ? 1 : 0);
      }
    });
  });

  it('deleting an audience against a deployment that names it: one of the two wins', async () => {
    await withCluster('postgres', 'race_audience', async (c) => {
      const { a, b, build } = await twoReplicasWithABuild(c);
      for (let round = 0; round < 10; round++) {
        const [aud] = await a.audiences.createMany([{ name: `aud${round}` }]);
        const [deployed, deleted] = await Promise.allSettled([a.deployments.launch('fraud', [aud!.id], deployDecision(build.id, [aud!.id])), b.audiences.delete(aud!.id)]);
        const exists = (await a.audiences.find(aud!.id)) !== undefined;
        // Deploy first: the delete is refused (409). Delete first: the deploy is refused (400).
        if (deployed.status === 'fulfilled') {
          expect(deleted.status).toBe('rejected');
          expect(((deleted as PromiseRejectedResult).reason as ApiError).status).toBe(409);
          expect(exists).toBe(true);
          await a.deployments.setStatus(deployed.value.id, 'FAILED', 'cleared for the next round');
        } else {
          expect(((deployed as PromiseRejectedResult).reason as ApiError).status).toBe(400);
          expect(deleted.status).toBe('fulfilled');
          expect(exists).toBe(false);
        }
      }
    });
  });
});
