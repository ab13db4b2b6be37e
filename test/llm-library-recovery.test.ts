// A library deployment whose GGUF file went missing recovers by itself once the file is back:
// through real restarts of the child host, it is FAILED with a clear reason while the file is
// gone (tried once per start, not in a loop), and LIVE again, answering chat, after it returns.
// The reason, with MODELS_DIR's path and what to do, is for the operator (the deployment status);
// inference callers get a 503 that names no path, and no route lists or shows the model meanwhile.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiClient, type Api } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { spawnHost, startLineOf, type ChildHost } from './helpers/child-host.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { tempDir } from './helpers/paths.js';

interface Deployment {
  status: string;
  reason: string | null;
}

async function connect(host: ChildHost, key: string): Promise<Api> {
  const res = await fetch(`${host.url}/api/v1/authentication/platform-api-key`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platformApiKey: key }),
  });
  return apiClient(host.url, ((await res.json()) as { accessToken: string }).accessToken);
}

async function settled(api: Api, modelId: string): Promise<Deployment> {
  for (;;) {
    const dep = await api<Deployment>('GET', `/api/v1/library/deployments/${modelId}`);
    expect(dep.status).toBe(200);
    if (dep.body.status !== 'PENDING' && dep.body.status !== 'DEPLOYING') return dep.body;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const chat = (api: Api) => api<{ choices: Array<{ message: { content: string } }>; error?: { code: string; message: string } }>('POST', '/v1/tiny/chat/completions', {
  model: 'tiny',
  messages: [{ role: 'user', content: 'Hello' }],
  temperature: 0,
  max_tokens: 4,
});

async function stop(host: ChildHost): Promise<void> {
  host.proc.kill('SIGTERM');
  expect(await host.exited).toBe(0);
}

describe('a library model whose file went missing', () => {
  it('is FAILED with the reason while the file is gone, and LIVE again once it is back', async () => {
    const dataDir = tempDir();
    const modelsDir = tempDir();
    const file = writeTinyChatModel(modelsDir, 'tiny-chat');
    const aside = path.join(tempDir(), file);
    const keyed = await runCli(['keys', 'create', '--name', 'recovery'], { DATA_DIR: dataDir });
    expect(keyed.code).toBe(0);
    const key = keyed.stdout.trim();
    const env = { DATA_DIR: dataDir, MODELS_DIR: modelsDir, LLM_CONTEXT_LENGTH: '256' };

    // Deploy while the file is there.
    let host = await spawnHost(env);
    let api = await connect(host, key);
    expect((await api('POST', '/api/v1/library/deployments', { name: 'tiny-chat', model_id: 'tiny' })).status).toBe(202);
    expect((await settled(api, 'tiny')).status).toBe('LIVE');
    expect((await chat(api)).status).toBe(200);
    await stop(host);

    // Start without the file: FAILED, saying which file is missing and what to do.
    fs.renameSync(path.join(modelsDir, file), aside);
    const reason = `the model file "${file}" is missing from MODELS_DIR (${modelsDir}); put it back and restart the host, which tries again at start-up, or undeploy the model`;
    host = await spawnHost(env);
    expect(await startLineOf(host)).toMatch(/; 1 model: tiny \(library, FAILED: missing_file\)$/);
    api = await connect(host, key);
    expect(await settled(api, 'tiny')).toMatchObject({ status: 'FAILED', reason });
    const refused = await chat(api);
    expect(refused.status).toBe(503);
    const unavailable = {
      code: 'unavailable',
      message: 'model "tiny" failed to load; its deployment status (GET /api/v1/library/deployments/tiny) says why',
      param: null,
      type: expect.any(String),
    };
    expect(refused.body.error).toEqual(unavailable);
    expect(JSON.stringify(refused.body)).not.toContain(modelsDir);
    // Every route of the model answers the same, the root surface included; none lists it.
    for (const [method, url, body] of [
      ['POST', '/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'Hello' }] }],
      ['POST', '/v1/tiny/completions', { model: 'tiny', prompt: 'Hello' }],
      ['POST', '/api/v1/models/tiny/tokenize', { text: 'Hello' }],
      ['GET', '/v1/models/tiny', undefined],
      ['GET', '/v1/tiny/models', undefined],
    ] as const) {
      const res = await api<{ error: unknown }>(method, url, body);
      expect(res.status, url).toBe(503);
      expect(res.body.error, url).toEqual(unavailable);
    }
    expect((await api<{ data: unknown[] }>('GET', '/v1/models')).body.data).toEqual([]);
    await stop(host);

    // Still missing: tried once at this start, FAILED again with the same reason; nothing spins.
    host = await spawnHost(env);
    expect(await startLineOf(host)).toMatch(/; 1 model: tiny \(library, FAILED: missing_file\)$/);
    api = await connect(host, key);
    expect(await settled(api, 'tiny')).toMatchObject({ status: 'FAILED', reason });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const attempts = host.stdout().split('\n').filter((l) => l.includes('"msg":"library model failed to load"'));
    expect(attempts).toHaveLength(1);
    await stop(host);

    // The file is back: the next start loads it, and chat answers.
    fs.renameSync(aside, path.join(modelsDir, file));
    host = await spawnHost(env);
    expect(await startLineOf(host)).toMatch(/; 1 model: tiny \(library, LIVE\)$/);
    api = await connect(host, key);
    expect(await settled(api, 'tiny')).toMatchObject({ status: 'LIVE', reason: null });
    const answered = await chat(api);
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    expect(typeof answered.body.choices[0]!.message.content).toBe('string');
    expect((await api<{ data: Array<{ id: string }> }>('GET', '/v1/tiny/models')).body.data.map((m) => m.id)).toEqual(['tiny']);
    await stop(host);
  });

  it('a file that is there but broken is not retried at start-up', async () => {
    const dataDir = tempDir();
    const modelsDir = tempDir();
    const file = writeTinyChatModel(modelsDir, 'tiny-chat');
    const keyed = await runCli(['keys', 'create', '--name', 'recovery'], { DATA_DIR: dataDir });
    const key = keyed.stdout.trim();
    const env = { DATA_DIR: dataDir, MODELS_DIR: modelsDir, LLM_CONTEXT_LENGTH: '256' };
    const good = fs.readFileSync(path.join(modelsDir, file));

    let host = await spawnHost(env);
    let api = await connect(host, key);
    expect((await api('POST', '/api/v1/library/deployments', { name: 'tiny-chat', model_id: 'tiny' })).status).toBe(202);
    expect((await settled(api, 'tiny')).status).toBe('LIVE');
    await stop(host);

    // Truncated: the load fails for the file's content, not for its absence.
    fs.writeFileSync(path.join(modelsDir, file), good.subarray(0, 64));
    host = await spawnHost(env);
    // It was LIVE, so this start tried it.
    expect(await startLineOf(host)).toMatch(/; 1 model: tiny \(library, FAILED: load_error\)$/);
    api = await connect(host, key);
    const failed = await settled(api, 'tiny');
    expect(failed.status).toBe('FAILED');
    expect(failed.reason).not.toContain('is missing from MODELS_DIR');
    await stop(host);

    // Repaired, but a broken file is a load error: it stays FAILED until deployed again.
    fs.writeFileSync(path.join(modelsDir, file), good);
    host = await spawnHost(env);
    expect(await startLineOf(host)).toMatch(/; 1 model: tiny \(library, FAILED: load_error, not retried\)$/);
    api = await connect(host, key);
    // The same record, but for the file's general.name, readable again now that the file is whole.
    expect(await settled(api, 'tiny')).toEqual({ ...failed, general_name: 'tiny-chat' });
    await stop(host);
  });
});
