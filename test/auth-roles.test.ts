// Roles and scoped keys (issue 22) end to end on the real host, on SQLite and PostgreSQL: each role
// against representative routes of every family, each kind of scope, protected variations, keys
// made before roles existed, revocation of a scoped key, the HTTP key routes, and that every route
// behind the token declares what it needs.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyGrant, Role } from '../src/auth/roles.js';
import { UNSCOPED } from '../src/auth/roles.js';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { listen, startInProcessHost, type TestHost } from './helpers/in-process-host.js';
import { linearModel } from './helpers/models.js';
import { STORE_ENGINES, useStoreEngines } from './helpers/store-engines.js';
import { tempDir } from './helpers/paths.js';
import { ApiKeyStore } from '../src/auth/api-keys.js';
import { openDatabase } from '../src/store/database.js';
import { migrations } from '../src/store/migrations.js';
import { openStore } from '../src/store/store.js';

const engines = useStoreEngines('auth_roles');

const FEATURES = ['a', 'b'];
const ROW = { columns: FEATURES, index: [0], data: [[0.5, -1]] };
type ErrorBody = { error: { code: string; message: string; param: string | null; type: string } };

describe.each(STORE_ENGINES)('roles and scopes on %s', (engine) => {
  let host: TestHost;
  let admin: Api;

  /** A client whose token was exchanged for a new key with `role` and `scope`. */
  async function clientFor(role: Role, scope: Partial<KeyGrant['scope']> = {}): Promise<{ api: Api; keyId: string }> {
    const created = await host.app.keys.create(`${role}-key`, { role, scope: { ...UNSCOPED, ...scope } });
    return { api: apiClient(host.url, await exchange(created.key)), keyId: created.id };
  }

  async function exchange(key: string): Promise<string> {
    const res = await fetch(`${host.url}/api/v1/authentication/platform-api-key`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ platformApiKey: key }) });
    expect(res.status).toBe(200);
    return ((await res.json()) as { accessToken: string }).accessToken;
  }

  async function expect403(call: Promise<{ status: number; body: unknown }>, message: string, param?: string | null) {
    const res = await call;
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    const { error } = res.body as ErrorBody;
    expect(error.code).toBe('permission_denied');
    expect(error.type).toBe('permission_error');
    expect(error.message).toBe(message);
    if (param !== undefined) expect(error.param).toBe(param);
  }

  async function expectStatus(call: Promise<{ status: number; body: unknown }>, status: number) {
    const res = await call;
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    return res;
  }

  async function uploadBuild(api: Api, modelId: string, bias: number): Promise<string> {
    const res = await expectStatus(api('POST', `/api/v1/models/${modelId}/builds?feature_names=${FEATURES.join(',')}`, linearModel(FEATURES, bias)), 201);
    return (res.body as { build_id: string }).build_id;
  }

  async function deployLive(api: Api, modelId: string, body: Record<string, unknown>) {
    const res = await expectStatus(api('POST', `/api/v1/models/${modelId}/deployments`, body), 202);
    const done = await waitForDeployment(admin, (res.body as { deployment_id: string }).deployment_id);
    expect(done.status, done.reason ?? '').toBe('LIVE');
  }

  beforeAll(async () => {
    host = await listen(await startInProcessHost(await engines.hostEnv(engine, { LOG_LEVEL: 'warn' })));
    const created = await host.app.keys.create('admin');
    admin = apiClient(host.url, await exchange(created.key));
    // A realtime model in project "default" and one in "shop", live; collections with and without tenants.
    await expectStatus(admin('POST', '/api/v1/models', { model_id: 'fraud' }), 201);
    await deployLive(admin, 'fraud', { build_id: await uploadBuild(admin, 'fraud', 0) });
    await expectStatus(admin('POST', '/api/v1/models', { model_id: 'cart', project: 'shop' }), 201);
    await deployLive(admin, 'cart', { build_id: await uploadBuild(admin, 'cart', 1) });
    await expectStatus(admin('POST', '/api/v1/vectors/collections', { name: 'docs', dimension: 2, multi_tenant: true }), 201);
    await expectStatus(admin('POST', '/api/v1/vectors/collections', { name: 'plain', dimension: 2 }), 201);
    for (const tenant of ['acme', 'globex']) {
      await expectStatus(admin('POST', '/api/v1/vectors/upsert', { collection_name: 'docs', tenant_id: tenant, vector: [{ id: `${tenant}-1`, values: [1, 0] }] }), 200);
    }
    await expectStatus(admin('POST', '/api/v1/vectors/upsert', { collection_name: 'plain', vector: [{ id: 'p1', values: [0, 1] }] }), 200);
  }, 60_000);
  afterAll(async () => {
    await host?.close();
  });

  describe('roles', () => {
    it('inference: predict, chat routes, vector reads and writes, GETs; no deploy, builds, audiences, collections, logs or keys', async () => {
      const { api } = await clientFor('inference');
      await expectStatus(api('POST', '/v1/fraud/predict', ROW), 200);
      await expectStatus(api('GET', '/api/v1/models'), 200);
      await expectStatus(api('GET', '/api/v1/models/fraud'), 200);
      await expectStatus(api('GET', '/api/v1/library'), 200);
      await expectStatus(api('GET', '/v1/models'), 200);
      // Allowed by role: the answer is the route's own (no such library model).
      await expectStatus(api('POST', '/v1/chat/completions', { model: 'nope', messages: [{ role: 'user', content: 'hi' }] }), 404);
      await expectStatus(api('POST', '/v1/embeddings', { model: 'nope', input: 'hi' }), 404);
      await expectStatus(api('POST', '/api/v1/vectors/search', { collection_name: 'docs', tenant_id: 'acme', reference_vector: { element: [1, 0] } }), 200);
      await expectStatus(api('GET', '/api/v1/vectors/collections/docs/acme-1?tenant_id=acme'), 200);
      await expectStatus(api('POST', '/api/v1/vectors/count', { collection_name: 'plain' }), 200);
      await expectStatus(api('POST', '/api/v1/vectors/upsert', { collection_name: 'plain', vector: [{ id: 'inf', values: [1, 1] }] }), 200);
      await expectStatus(api('POST', '/api/v1/vectors/delete', { collection_name: 'plain', vector_identifiers: [{ vector_id: 'inf' }] }), 200);

      const build = await uploadBuild(admin, 'fraud', 2);
      await expect403(api('POST', '/api/v1/models/fraud/deployments', { build_id: build }), 'this key\'s role "inference" cannot deploy models', null);
      await expect403(api('POST', '/api/v1/models/fraud/undeploy', { variation_name: 'default' }), 'this key\'s role "inference" cannot deploy models');
      await expect403(api('PUT', '/api/v1/models/fraud/instance-type', { instance_type: 'cpu' }), 'this key\'s role "inference" cannot deploy models');
      await expect403(api('POST', '/api/v1/library/deployments', { file: 'x.gguf', model_id: 'x' }), 'this key\'s role "inference" cannot deploy models');
      await expect403(api('POST', '/api/v1/models', { model_id: 'mine' }), 'this key\'s role "inference" cannot create models or upload builds');
      await expect403(api('POST', '/api/v1/models/fraud/builds?feature_names=a,b', linearModel(FEATURES, 0)), 'this key\'s role "inference" cannot create models or upload builds');
      await expect403(api('POST', '/api/v1/audiences', { spec: { audiences: [{ name: 'x' }] } }), 'this key\'s role "inference" cannot change audiences');
      await expect403(api('POST', '/api/v1/vectors/collections', { name: 'mine', dimension: 2 }), 'this key\'s role "inference" cannot create, delete, export or import vector collections');
      await expect403(api('DELETE', '/api/v1/vectors/collections/plain'), 'this key\'s role "inference" cannot create, delete, export or import vector collections');
      await expect403(api('GET', '/api/v1/models/fraud/logs'), 'this key\'s role "inference" cannot read request logs');
      await expect403(api('GET', '/api/v1/keys'), 'this key\'s role "inference" cannot manage API keys');
    });

    it('member: deploys and manages, but no keys and no protection', async () => {
      const { api } = await clientFor('member');
      await expectStatus(api('POST', '/api/v1/models', { model_id: 'member-model' }), 201);
      await deployLive(api, 'member-model', { build_id: await uploadBuild(api, 'member-model', 0) });
      await expectStatus(api('GET', '/api/v1/models/member-model/logs'), 200);
      await expectStatus(api('POST', '/api/v1/vectors/collections', { name: 'member-coll', dimension: 2 }), 201);
      await expectStatus(api('DELETE', '/api/v1/vectors/collections/member-coll'), 200);
      await expect403(api('GET', '/api/v1/keys'), 'this key\'s role "member" cannot manage API keys');
      await expect403(api('POST', '/api/v1/keys', { role: 'admin' }), 'this key\'s role "member" cannot manage API keys');
      await expect403(api('PUT', '/api/v1/models/member-model/variations/default/protection', { protected: true }), 'this key\'s role "member" cannot protect variations');
      await expect403(api('POST', '/api/v1/models/member-model/deployments', { build_id: await uploadBuild(api, 'member-model', 1), protected: true }), 'this key\'s role "member" cannot protect variations');
    });

    it('maintainer: everything but keys', async () => {
      const { api } = await clientFor('maintainer');
      await expectStatus(api('POST', '/api/v1/models', { model_id: 'maint-model' }), 201);
      await deployLive(api, 'maint-model', { build_id: await uploadBuild(api, 'maint-model', 0), protected: true });
      await expect403(api('GET', '/api/v1/keys'), 'this key\'s role "maintainer" cannot manage API keys');
      await expect403(api('DELETE', `/api/v1/keys/${'f'.repeat(16)}`), 'this key\'s role "maintainer" cannot manage API keys');
    });

    it('admin: manages keys over HTTP, with the role and scope checked by schema', async () => {
      const created = await expectStatus(admin('POST', '/api/v1/keys', { name: 'ci', role: 'inference', tenants: ['acme'] }), 201);
      const key = created.body as { id: string; key: string; role: string; scope: unknown };
      expect(key.role).toBe('inference');
      expect(key.scope).toEqual({ project: null, collections: null, tenants: ['acme'] });
      expect(key.key).toMatch(/^psk_/);
      const listed = (await expectStatus(admin('GET', '/api/v1/keys'), 200)).body as { keys: Array<{ id: string; role: string; scope: unknown }> };
      expect(listed.keys.find((k) => k.id === key.id)).toMatchObject({ role: 'inference', scope: { project: null, collections: null, tenants: ['acme'] } });
      for (const [body, field] of [
        [{ role: 'owner' }, 'role'],
        [{ project: 'Bad Project' }, 'project'],
        [{ collections: [] }, 'collections'],
        [{ tenants: [''] }, 'tenants'],
        [{ scope: 'x' }, 'additional properties'],
      ] as const) {
        const res = await expectStatus(admin('POST', '/api/v1/keys', body), 400);
        expect((res.body as ErrorBody).error.message).toContain(field);
      }
      const revoked = await expectStatus(admin('DELETE', `/api/v1/keys/${key.id}`), 200);
      expect((revoked.body as { revokedAt: number | null }).revokedAt).toEqual(expect.any(Number));
      await expectStatus(admin('DELETE', `/api/v1/keys/${'f'.repeat(16)}`), 404);
    });
  });

  describe('protected variations', () => {
    it('a member cannot change a protected variation; a maintainer can, and GET shows the protection', async () => {
      await expectStatus(admin('POST', '/api/v1/models', { model_id: 'guarded' }), 201);
      await deployLive(admin, 'guarded', { build_id: await uploadBuild(admin, 'guarded', 0) });
      const protect = await expectStatus(admin('PUT', '/api/v1/models/guarded/variations/default/protection', { protected: true }), 202);
      expect((await waitForDeployment(admin, (protect.body as { deployment_id: string }).deployment_id)).status).toBe('LIVE');
      const model = (await expectStatus(admin('GET', '/api/v1/models/guarded'), 200)).body as { live_deployment: { traffic: { protected?: string[] } } };
      expect(model.live_deployment.traffic.protected).toEqual(['default']);

      const { api: member } = await clientFor('member');
      const message = 'this key\'s role "member" cannot change the protected variation "default" of model "guarded"; a maintainer or admin can';
      await expect403(member('POST', '/api/v1/models/guarded/deployments', { build_id: await uploadBuild(member, 'guarded', 5) }), message, 'variation_name');
      await expect403(member('POST', '/api/v1/models/guarded/undeploy', { variation_name: 'default' }), message);
      // A new variation next to it, which leaves its traffic as it is, is allowed.
      const audience = (await expectStatus(admin('POST', '/api/v1/audiences', { spec: { audiences: [{ name: 'guarded-everyone' }] } }), 201)).body as { audiences: Array<{ id: string }> };
      const id = audience.audiences[0]!.id;
      const canary = await uploadBuild(member, 'guarded', 6);
      const withCanary = (weight: number) => [{ id, routes: [{ variation_name: 'default', weight: 100 - weight, shadow: false }, { variation_name: 'canary', weight, shadow: false }], fallback_variation: 'default' }];
      // Taking weight from the protected variation is a change to it.
      await expect403(member('POST', '/api/v1/models/guarded/deployments', { build_id: canary, variation_name: 'canary', audiences: withCanary(10) }), message);
      await deployLive(member, 'guarded', { build_id: canary, variation_name: 'canary', audiences: withCanary(0) });

      const { api: maintainer } = await clientFor('maintainer');
      await deployLive(maintainer, 'guarded', { build_id: canary, variation_name: 'canary', audiences: withCanary(10) });
      const lifted = await expectStatus(maintainer('PUT', '/api/v1/models/guarded/variations/default/protection', { protected: false }), 202);
      expect((await waitForDeployment(admin, (lifted.body as { deployment_id: string }).deployment_id)).status).toBe('LIVE');
      const after = (await expectStatus(admin('GET', '/api/v1/models/guarded'), 200)).body as { live_deployment: { traffic: { protected?: string[] } } };
      expect(after.live_deployment.traffic.protected).toBeUndefined();
      await deployLive(member, 'guarded', { build_id: canary, variation_name: 'canary', audiences: withCanary(20) });
    });
  });

  describe('scopes', () => {
    it('a project scope: only that project\'s models, listed and used', async () => {
      const { api } = await clientFor('maintainer', { project: 'shop' });
      await expectStatus(api('POST', '/v1/cart/predict', ROW), 200);
      await expect403(api('POST', '/v1/fraud/predict', ROW), 'this key is scoped to project "shop"; model "fraud" is in project "default", outside it', 'model_id');
      await expect403(api('GET', '/api/v1/models/fraud/deployments'), 'this key is scoped to project "shop"; model "fraud" is in project "default", outside it');
      await expect403(api('POST', '/v1/chat/completions', { model: 'fraud', messages: [{ role: 'user', content: 'hi' }] }), 'this key is scoped to project "shop"; model "fraud" is in project "default", outside it', 'model');
      await expect403(api('POST', '/api/v1/models', { model_id: 'elsewhere' }), 'this key is scoped to project "shop"; project "default" is outside it', 'project');
      await expectStatus(api('POST', '/api/v1/models', { model_id: 'shop-two', project: 'shop' }), 201);
      await expect403(api('POST', '/api/v1/library/deployments', { file: 'x.gguf', model_id: 'x' }), 'this key is scoped to project "shop"; project "library" is outside it');
      await expect403(api('POST', '/api/v1/audiences', { spec: { audiences: [{ name: 'x' }] } }), 'this key is scoped to project "shop"; audiences belong to every project');
      const listed = (await expectStatus(api('GET', '/api/v1/models'), 200)).body as { models: Array<{ project: string }> };
      expect(new Set(listed.models.map((m) => m.project))).toEqual(new Set(['shop']));
      expect(((await expectStatus(api('GET', '/v1/models'), 200)).body as { data: unknown[] }).data).toEqual([]);
      // A deployment's model decides.
      const deployments = (await expectStatus(admin('GET', '/api/v1/models/fraud/deployments'), 200)).body as { deployments: Array<{ deployment_id: string }> };
      await expect403(api('GET', `/api/v1/deployments/${deployments.deployments[0]!.deployment_id}`), 'this key is scoped to project "shop"; model "fraud" is in project "default", outside it');
    });

    it('a collections scope: only those collections, listed and used', async () => {
      const { api } = await clientFor('member', { collections: ['plain'] });
      const listed = (await expectStatus(api('GET', '/api/v1/vectors/collections'), 200)).body as { collections: Array<{ name: string }> };
      expect(listed.collections.map((c) => c.name)).toEqual(['plain']);
      await expectStatus(api('POST', '/api/v1/vectors/count', { collection_name: 'plain' }), 200);
      await expect403(api('POST', '/api/v1/vectors/count', { collection_name: 'docs', tenant_id: 'acme' }), 'this key is scoped to collections ["plain"]; collection "docs" is outside it', 'collection_name');
      await expect403(api('GET', '/api/v1/vectors/collections/docs'), 'this key is scoped to collections ["plain"]; collection "docs" is outside it', 'name');
      await expect403(api('GET', '/api/v1/vectors/collections/docs/acme-1?tenant_id=acme'), 'this key is scoped to collections ["plain"]; collection "docs" is outside it', 'collection');
      await expect403(api('POST', '/api/v1/vectors/upsert', { collection_name: 'docs', tenant_id: 'acme', vector: [{ id: 'x', values: [1, 1] }] }), 'this key is scoped to collections ["plain"]; collection "docs" is outside it');
      await expect403(api('POST', '/api/v1/vectors/collections', { name: 'other', dimension: 2 }), 'this key is scoped to collections ["plain"]; collection "other" is outside it', 'name');
      await expect403(api('POST', '/api/v1/vectors/import'), 'this key is scoped to collections ["plain"]; an import must name its collection with ?name=', 'name');
      // The unscoped routes are not limited by it.
      await expectStatus(api('POST', '/v1/fraud/predict', ROW), 200);
    });

    it('a tenants scope: only those tenants of multi-tenant collections; no tenant, another, or a plain collection is a 403', async () => {
      const { api } = await clientFor('inference', { tenants: ['acme'] });
      const search = (body: Record<string, unknown>) => api('POST', '/api/v1/vectors/search', { collection_name: 'docs', reference_vector: { element: [1, 0] }, ...body });
      const found = (await expectStatus(search({ tenant_id: 'acme' }), 200)).body as { search_results: Array<{ id: string }> };
      expect(found.search_results.map((r) => r.id)).toEqual(['acme-1']);
      await expect403(search({ tenant_id: 'globex' }), 'this key is scoped to tenants ["acme"]; tenant "globex" is outside it', 'tenant_id');
      await expect403(search({}), 'this key is scoped to tenants ["acme"]; name one of them in tenant_id', 'tenant_id');
      await expect403(api('GET', '/api/v1/vectors/collections/docs/globex-1?tenant_id=globex'), 'this key is scoped to tenants ["acme"]; tenant "globex" is outside it');
      await expectStatus(api('GET', '/api/v1/vectors/collections/docs/acme-1?tenant_id=acme'), 200);
      for (const route of ['count', 'scroll', 'sample']) {
        await expectStatus(api('POST', `/api/v1/vectors/${route}`, { collection_name: 'docs', tenant_id: 'acme' }), 200);
        await expect403(api('POST', `/api/v1/vectors/${route}`, { collection_name: 'docs', tenant_id: 'globex' }), 'this key is scoped to tenants ["acme"]; tenant "globex" is outside it');
      }
      await expect403(api('POST', '/api/v1/vectors/count', { collection_name: 'plain' }), 'this key is scoped to tenants ["acme"]; the collection "plain" has no tenants', 'collection_name');
      // Writes: every vector's tenant, and every identifier's.
      await expectStatus(api('POST', '/api/v1/vectors/upsert', { collection_name: 'docs', tenant_id: 'acme', vector: [{ id: 'acme-2', values: [0, 1] }] }), 200);
      await expect403(
        api('POST', '/api/v1/vectors/upsert', { collection_name: 'docs', vector: [{ id: 'a', values: [0, 1], tenant_id: 'acme' }, { id: 'g', values: [0, 1], tenant_id: 'globex' }] }),
        'this key is scoped to tenants ["acme"]; tenant "globex" is outside it',
      );
      await expect403(api('POST', '/api/v1/vectors/upsert', { collection_name: 'plain', vector: [{ id: 'p2', values: [0, 1] }] }), 'this key is scoped to tenants ["acme"]; the collection "plain" has no tenants');
      await expect403(
        api('POST', '/api/v1/vectors/delete', { collection_name: 'docs', tenant_id: 'acme', vector_identifiers: [{ vector_id: 'globex-1', tenant_id: 'globex' }] }),
        'this key is scoped to tenants ["acme"]; tenant "globex" is outside it',
      );
      await expectStatus(api('POST', '/api/v1/vectors/delete', { collection_name: 'docs', tenant_id: 'acme', vector_identifiers: [{ vector_id: 'acme-2' }] }), 200);
      // Nothing of globex was touched.
      expect(((await expectStatus(admin('POST', '/api/v1/vectors/count', { collection_name: 'docs', tenant_id: 'globex' }), 200)).body as { count: number }).count).toBe(1);

      const { api: member } = await clientFor('member', { tenants: ['acme'] });
      await expect403(member('DELETE', '/api/v1/vectors/collections/docs'), 'this key is scoped to tenants ["acme"]; deleting a collection touches every tenant');
      await expect403(member('GET', '/api/v1/vectors/export/docs'), 'this key is scoped to tenants ["acme"]; exporting a collection touches every tenant');
    });

    it('a revoked scoped key is refused at once', async () => {
      const { api, keyId } = await clientFor('inference', { tenants: ['acme'], collections: ['docs'] });
      await expectStatus(api('POST', '/api/v1/vectors/count', { collection_name: 'docs', tenant_id: 'acme' }), 200);
      await expectStatus(admin('DELETE', `/api/v1/keys/${keyId}`), 200);
      const res = await expectStatus(api('POST', '/api/v1/vectors/count', { collection_name: 'docs', tenant_id: 'acme' }), 401);
      expect((res.body as ErrorBody).error.message).toBe('the API key behind this token was revoked');
    });
  });

  it('a key row written without the role columns (as before migration 12) is an unscoped admin', async () => {
    const id = crypto.randomBytes(8).toString('hex');
    const secret = crypto.randomBytes(32).toString('base64url');
    const hash = crypto.createHash('sha256').update(secret).digest();
    await sql`INSERT INTO api_keys (id, name, secret_hash, created_at, revoked_at, last_used_at) VALUES (${id}, ${'old'}, ${hash}, ${Date.now()}, ${null}, ${null})`.execute(host.store.db);
    const old = apiClient(host.url, await exchange(`psk_${id}_${secret}`));
    const listed = (await expectStatus(old('GET', '/api/v1/keys'), 200)).body as { keys: Array<{ id: string; role: string; scope: unknown }> };
    expect(listed.keys.find((k) => k.id === id)).toMatchObject({ role: 'admin', scope: { project: null, collections: null, tenants: null } });
  });

  it('every route behind the token declares what it needs (x-access in the API document)', async () => {
    const doc = (await expectStatus(admin('GET', '/openapi.json'), 200)).body as { paths: Record<string, Record<string, { security?: unknown[]; 'x-access'?: { action: string } }>> };
    const missing: string[] = [];
    let counted = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (!operation.security?.length) continue;
        counted++;
        if (!operation['x-access']?.action) missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(counted).toBeGreaterThan(40);
    expect(missing).toEqual([]);
  });
});

describe('migration 12', () => {
  it('makes the keys of a store from before roles unscoped admins, whose tokens keep working', async () => {
    const dir = tempDir();
    const before = openDatabase(dir, migrations.filter((m) => m.version <= 11));
    const id = crypto.randomBytes(8).toString('hex');
    const secret = crypto.randomBytes(32).toString('base64url');
    before.prepare('INSERT INTO api_keys (id, name, secret_hash, created_at, revoked_at, last_used_at) VALUES (?, ?, ?, ?, NULL, NULL)').run(id, 'old', crypto.createHash('sha256').update(secret).digest(), Date.now());
    before.close();
    const store = await openStore({ dataDir: dir });
    try {
      const keys = new ApiKeyStore(store.db);
      expect(await keys.verify(`psk_${id}_${secret}`)).toMatchObject({ id, role: 'admin', scope: UNSCOPED });
      expect(await keys.lookup(id)).toEqual({ state: 'active', grant: { role: 'admin', scope: UNSCOPED } });
    } finally {
      await store.close();
    }
  });
});
