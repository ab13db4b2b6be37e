// The host on PostgreSQL (DATABASE_URL), end to end: two replicas with their own DATA_DIR on one
// database and one token secret. What one replica records, the other serves after it starts:
// keys made by the CLI against the database, a realtime build uploaded through A (its bytes are in
// the database, so B fetches and caches them), a library model (the GGUF file on a MODELS_DIR both
// mount), a vector collection and its vectors; and a key revoked by the CLI stops on both within a
// second.
// Live propagation between running replicas (notifications) comes later; here B starts after.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { spawnHost, startLineOf, type ChildHost } from './helpers/child-host.js';
import { runCli } from './helpers/cli.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { linearModel } from './helpers/models.js';
import { tempDir } from './helpers/paths.js';
import { startPostgres, type TestPostgres } from './helpers/postgres.js';

const SECRET = 'a-token-secret-shared-by-every-replica-0123456789';
const FEATURES = ['amount', 'age', 'country'];
const ROWS = { columns: FEATURES, data: [[120.5, 34, 2], [3, 71, 1]] };

describe('two replicas on one PostgreSQL', () => {
  let pg: TestPostgres;
  let env: Record<string, string>;
  const hosts: ChildHost[] = [];

  async function start(dataDir: string): Promise<ChildHost> {
    const host = await spawnHost({ ...env, DATA_DIR: dataDir });
    hosts.push(host);
    await startLineOf(host); // printed once the models it restores are loaded
    return host;
  }
  async function stop(host: ChildHost): Promise<void> {
    host.proc.kill('SIGTERM');
    expect(await host.exited).toBe(0);
  }
  async function tokenOn(host: ChildHost, key: string): Promise<string> {
    const res = await fetch(`${host.url}/api/v1/authentication/platform-api-key`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ platformApiKey: key }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { accessToken: string }).accessToken;
  }

  beforeAll(async () => {
    pg = await startPostgres();
    const modelsDir = tempDir();
    writeTinyChatModel(modelsDir, 'tiny-chat');
    env = { DATABASE_URL: await pg.createDatabase('replicas'), PLATFORM_TOKEN_SECRET: SECRET, MODELS_DIR: modelsDir };
  });
  afterAll(async () => {
    for (const h of hosts) if (h.proc.exitCode === null) h.proc.kill('SIGKILL');
    await pg?.stop();
  });

  it('serves on B what was deployed through A, with A\'s tokens, and stops a revoked key on both', async () => {
    const created = await runCli(['keys', 'create', '--name', 'ops'], { ...env, DATA_DIR: tempDir() });
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();

    const a = await start(tempDir());
    const token = await tokenOn(a, key);
    const onA: Api = apiClient(a.url, token);
    expect((await onA('POST', '/api/v1/models', { model_id: 'fraud' })).status).toBe(201);
    const build = await onA<{ build_id: string }>('POST', `/api/v1/models/fraud/builds?feature_names=${FEATURES.join(',')}`, linearModel(FEATURES, 0.25));
    expect(build.status, JSON.stringify(build.body)).toBe(201);
    const dep = await onA<{ deployment_id: string }>('POST', '/api/v1/models/fraud/deployments', { build_id: build.body.build_id });
    expect(dep.status, JSON.stringify(dep.body)).toBe(202);
    expect((await waitForDeployment(onA, dep.body.deployment_id)).status).toBe('LIVE');
    const answerA = await onA('POST', '/v1/fraud/predict', ROWS);
    expect(answerA.status, JSON.stringify(answerA.body)).toBe(200);

    const lib = await onA<{ status: string }>('POST', '/api/v1/library/deployments', { name: 'tiny-chat', model_id: 'tiny' });
    expect(lib.status, JSON.stringify(lib.body)).toBe(202);
    for (let i = 0; i < 200 && (await onA<{ status: string }>('GET', '/api/v1/library/deployments/tiny')).body.status !== 'LIVE'; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const chat = { model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, temperature: 0 };
    const chatA = await onA<{ choices: Array<{ message: { content: string } }> }>('POST', '/v1/chat/completions', chat);
    expect(chatA.status, JSON.stringify(chatA.body)).toBe(200);

    expect((await onA('POST', '/api/v1/vectors/collections', { name: 'docs', dimension: 3, metric: 'cosine' })).status).toBe(201);
    const vector = { id: 'v1', values: [0.5, -1, 2], properties: { lang: 'en' } };
    expect((await onA('POST', '/api/v1/vectors/upsert', { collection_name: 'docs', vector: [vector] })).status).toBe(200);

    // B: another DATA_DIR, nothing on its disk; everything it serves comes from the database.
    const bDir = tempDir();
    const b = await start(bDir);
    const onB = apiClient(b.url, token); // A's token
    const answerB = await onB('POST', '/v1/fraud/predict', ROWS);
    expect(answerB.status, JSON.stringify(answerB.body)).toBe(200);
    expect(answerB.body).toEqual(answerA.body);
    const chatB = await onB<{ choices: Array<{ message: { content: string } }> }>('POST', '/v1/chat/completions', chat);
    expect(chatB.status, JSON.stringify(chatB.body)).toBe(200);
    expect(chatB.body.choices[0]!.message.content).toBe(chatA.body.choices[0]!.message.content);
    expect((await onB<{ data: Array<{ id: string }> }>('GET', '/v1/models')).body.data.map((m) => m.id)).toEqual(['tiny']);
    expect((await onB('GET', '/api/v1/vectors/collections/docs/v1')).body).toEqual({ vector });

    // A key revoked against the database stops on both replicas.
    const keyId = key.split('_')[1]!;
    const revoked = await runCli(['keys', 'revoke', keyId], { ...env, DATA_DIR: tempDir() });
    expect(revoked.code, revoked.stderr).toBe(0);
    // Each replica holds revocations in memory and reads them again every half second or so.
    for (const on of [onA, onB]) {
      const until = Date.now() + 3000;
      while ((await on('GET', '/api/v1/models')).status !== 401) {
        expect(Date.now()).toBeLessThan(until);
        await new Promise((r) => setTimeout(r, 50));
      }
    }

    // A restart of both comes back to the same state.
    await stop(a);
    await stop(b);
    const again = await start(bDir);
    const key2 = (await runCli(['keys', 'create', '--name', 'after'], { ...env, DATA_DIR: tempDir() })).stdout.trim();
    const onAgain = apiClient(again.url, await tokenOn(again, key2));
    expect((await onAgain('POST', '/v1/fraud/predict', ROWS)).body).toEqual(answerA.body);
    await stop(again);
    expect(fs.existsSync(path.join(bDir, 'platform.db'))).toBe(false);
  });
});
