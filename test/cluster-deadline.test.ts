// A deployment waits for every live replica, and no longer than DEPLOY_TIMEOUT_SECONDS: with a
// second replica that heartbeats but never loads anything (a row the test keeps fresh, as a stuck
// process would), a deployment through the real host stays DEPLOYING, then fails naming that
// replica; once the stuck replica stops heartbeating, a deployment goes LIVE on the host alone.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { startCluster, type Cluster } from './helpers/cluster.js';
import { linearModel } from './helpers/models.js';
import { startPostgres, type TestPostgres } from './helpers/postgres.js';

const FEATURES = ['a', 'b'];

let server: TestPostgres;
let cluster: Cluster;
let db: pg.Client;
let api: Api;

beforeAll(async () => {
  server = await startPostgres();
  const started = await startCluster(server, 'deadline', ['replica-a'], { DEPLOY_TIMEOUT_SECONDS: '2', REPLICA_TIMEOUT_MS: '1000', CONFIG_POLL_MS: '100' });
  cluster = started.cluster;
  api = apiClient(cluster.url('replica-a'), started.token);
  db = new pg.Client({ connectionString: started.databaseUrl });
  await db.connect();
}, 60_000);

afterAll(async () => {
  await db?.end();
  await cluster?.stopAll('SIGKILL');
  await server?.stop();
});

describe('a deployment and a replica that never loads it', () => {
  it('waits for it, fails after DEPLOY_TIMEOUT_SECONDS naming it, and goes LIVE once it is gone', async () => {
    const beat = () =>
      db.query(
        `INSERT INTO replicas (id, address, state, started_at, heartbeat_at, applied_version, loaded)
         VALUES ('stuck', 'http://127.0.0.1:9', 'serving', 0, (extract(epoch from clock_timestamp()) * 1000)::bigint, 0, '{"serving":[],"prepared":[],"library":[]}')
         ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at`,
      );
    await beat();
    const heart = setInterval(() => void beat(), 100);
    try {
      expect((await api('POST', '/api/v1/models', { model_id: 'fraud' })).status).toBe(201);
      const build = await api<{ build_id: string }>('POST', `/api/v1/models/fraud/builds?feature_names=${FEATURES.join(',')}`, linearModel(FEATURES, 1));
      const dep = await api<{ deployment_id: string }>('POST', '/api/v1/models/fraud/deployments', { build_id: build.body.build_id });
      expect(dep.status).toBe(202);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect((await api<{ status: string }>('GET', `/api/v1/deployments/${dep.body.deployment_id}`)).body.status).toBe('DEPLOYING');
      expect(await waitForDeployment(api, dep.body.deployment_id, 10_000)).toMatchObject({
        status: 'FAILED',
        reason: 'not loaded on replica stuck within 2 s (DEPLOY_TIMEOUT_SECONDS)',
      });
    } finally {
      clearInterval(heart);
    }
    // Silent for longer than REPLICA_TIMEOUT_MS: no longer waited for.
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const build = (await api<{ builds: Array<{ build_id: string }> }>('GET', '/api/v1/models/fraud/builds')).body.builds[0]!.build_id;
    const again = await api<{ deployment_id: string }>('POST', '/api/v1/models/fraud/deployments', { build_id: build });
    expect(await waitForDeployment(api, again.body.deployment_id, 10_000)).toMatchObject({ status: 'LIVE' });
    const model = await api<{ replicas: { applied: number; total: number } }>('GET', '/api/v1/models/fraud');
    expect(model.body.replicas).toEqual({ applied: 1, total: 1 });
  }, 60_000);
});
