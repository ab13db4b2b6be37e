// The library commands of the real `platform` binary against a real host process.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { spawnHost, type ChildHost } from './helpers/child-host.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { tempDir } from './helpers/paths.js';
import { cudaUnavailableReason } from '../src/native/cuda-availability.js';

let host: ChildHost;
let env: Record<string, string>;

beforeAll(async () => {
  const modelsDir = tempDir();
  writeTinyChatModel(modelsDir, 'tiny-chat', { license: 'mit' });
  // Two "quantizations" of one model: files of their own, general.name "twin" in both (defect 9).
  for (const [file, seed] of [['twin-q4.gguf', 7], ['twin-q8.gguf', 8]] as const) {
    fs.renameSync(path.join(modelsDir, writeTinyChatModel(modelsDir, 'twin', { seed })), path.join(modelsDir, file));
  }
  host = await spawnHost({ MODELS_DIR: modelsDir, LLM_CONTEXT_LENGTH: '256' });
  const key = (await runCli(['keys', 'create'], { DATA_DIR: host.dataDir })).stdout.trim();
  env = { PLATFORM_URL: host.url, PLATFORM_API_KEY: key, PLATFORM_CACHE_DIR: tempDir() };
});
afterAll(async () => {
  host.proc.kill('SIGTERM');
  await host.exited;
});

const ok = async (args: string[]) => {
  const res = await runCli(args, env);
  expect(res.code, `${args.join(' ')}\n${res.stderr}`).toBe(0);
  return res;
};

describe('platform library', () => {
  it('lists, deploys with --wait, moves to another instance, shows metrics, and undeploys', async () => {
    const list = await ok(['library', 'list']);
    expect(list.stdout).toMatch(/^NAME\s+FILE\s+SIZE\s+ARCH\s+PARAMS\s+QUANT\s+CONTEXT\s+LICENCE/);
    expect(list.stdout).toMatch(/tiny-chat\s+tiny-chat\.gguf\s+\S+\s+llama\s+\S+\s+F32\s+512\s+mit/);

    const deploy = await ok(['library', 'deploy', 'tiny-chat', '--model-id', 'tiny', '--wait']);
    expect(deploy.stdout).toBe('tiny\n');
    expect(deploy.stderr).toMatch(/tiny \(tiny-chat\): LIVE\n$/);

    const { accessToken } = (await (
      await fetch(`${host.url}/api/v1/authentication/platform-api-key`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ platformApiKey: env.PLATFORM_API_KEY }) })
    ).json()) as { accessToken: string };
    const res = await fetch(`${host.url}/v1/tiny/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5, temperature: 0 }),
    });
    expect(res.status).toBe(200);

    const moved = await ok(['models', 'set-instance-type', 'tiny', 'cpu', '--threads', '1', '--wait']);
    expect(moved.stdout).toBe('tiny: cpu\n');
    // models get: the loaded file and its instance for people, the model route's JSON with --json.
    const details = (await ok(['models', 'get', 'tiny'])).stdout;
    expect(details).toMatch(/^model:\s+tiny\nkind:\s+library\nproject:\s+library\n/);
    expect(details).toMatch(/\nfile:\s+tiny-chat\.gguf \(tiny-chat\)\nstatus:\s+LIVE\ninstance:\s+cpu, 1 thread\nreplicas:\s+applied on 1\/1 replica\nlicence:\s+mit\n$/);
    expect(details).not.toMatch(/undefined|null|\[object/);
    const json = JSON.parse((await ok(['models', 'get', 'tiny', '--json'])).stdout) as { model: { kind: string }; live_deployment: unknown };
    expect(json.model.kind).toBe('library');
    expect(json.live_deployment).toBeNull();
    const noCuda = cudaUnavailableReason();
    if (noCuda !== null) {  // (a GPU host switches instead: test/llm-engine-cuda.test.ts covers cuda)
      const cuda = await runCli(['models', 'set-instance-type', 'tiny', 'cuda'], env);
      expect(cuda.code).toBe(1);
      expect(cuda.stderr).toContain(`instance type cuda is not available on this host: ${noCuda}`);
    }

    const metrics = await ok(['metrics', 'tiny']);
    expect(metrics.stdout).toMatch(/average throughput \(5 min\)\s+0\.2 rpm/);
    expect(metrics.stdout).toMatch(/time to first token \(ms\)\s+\d/);
    expect(metrics.stdout).toMatch(/time per output token \(ms\)\s+\d/);

    expect((await ok(['library', 'undeploy', 'tiny'])).stdout).toBe('undeployed tiny\n');
    const gone = await runCli(['library', 'undeploy', 'tiny'], env);
    expect(gone.code).toBe(1);
  });

  it('deploys two files with one general.name side by side, by file name or --name, and both chat (defect 9)', async () => {
    const { accessToken } = (await (
      await fetch(`${host.url}/api/v1/authentication/platform-api-key`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ platformApiKey: env.PLATFORM_API_KEY }) })
    ).json()) as { accessToken: string };
    const api = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(`${host.url}${route}`, {
        method,
        headers: { authorization: `Bearer ${accessToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    // The general.name both share names neither.
    const ambiguous = await runCli(['library', 'deploy', 'twin', '--model-id', 'twin'], env);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toContain('"twin" names 2 files in MODELS_DIR (twin-q4.gguf, twin-q8.gguf); name the file to deploy (HTTP 400)');

    // By file: the deployment is named after the file; --name names it.
    expect((await ok(['library', 'deploy', 'twin-q4.gguf', '--model-id', 'q4', '--wait'])).stderr).toMatch(/q4 \(twin-q4\): LIVE\n$/);
    expect((await ok(['library', 'deploy', 'twin-q8', '--model-id', 'q8', '--name', 'twin 8-bit', '--wait'])).stderr).toMatch(/q8 \(twin 8-bit\): LIVE\n$/);

    // A name taken is a 409 naming the deployment that holds it, from the CLI and the API alike.
    const clash = await runCli(['library', 'deploy', 'tiny-chat.gguf', '--model-id', 'clash', '--name', 'twin 8-bit'], env);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toBe('platform: "twin 8-bit" is already deployed as model "q8" (HTTP 409)\n');
    const again = await api('POST', '/api/v1/library/deployments', { file: 'twin-q4.gguf', model_id: 'clash' });
    expect(again).toEqual({
      status: 409,
      body: { error: { code: 'conflict', message: '"twin-q4" is already deployed as model "q4"; deploy "twin-q4.gguf" under another "name"', param: 'name', type: 'invalid_request_error' } },
    });
    const padded = await api('POST', '/api/v1/library/deployments', { file: 'twin-q4.gguf', name: ' twin', model_id: 'clash' });
    expect(padded.status).toBe(400);
    expect((padded.body.error as { param: string }).param).toBe('name');
    const none = await api('POST', '/api/v1/library/deployments', { model_id: 'clash' });
    expect(none.status).toBe(400);
    expect((none.body.error as { param: string }).param).toBe('file');
    expect((await api('GET', '/api/v1/library/deployments/clash')).status).toBe(404);

    // Both chat at once, each its own model.
    const answers = await Promise.all(
      ['q4', 'q8'].map(async (model) => {
        const res = await fetch(`${host.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, temperature: 0 }),
        });
        expect(res.status).toBe(200);
        return ((await res.json()) as { model: string }).model;
      }),
    );
    expect(answers).toEqual(['q4', 'q8']);

    // The deployments with their names, files and the general.name they share.
    const listed = await api('GET', '/api/v1/library/deployments');
    expect((listed.body.deployments as Array<Record<string, unknown>>).map((d) => [d.model_id, d.name, d.file, d.general_name])).toEqual([
      ['q4', 'twin-q4', 'twin-q4.gguf', 'twin'],
      ['q8', 'twin 8-bit', 'twin-q8.gguf', 'twin'],
    ]);
    expect((await api('GET', '/api/v1/library/deployments/q8')).body).toMatchObject({ name: 'twin 8-bit', file: 'twin-q8.gguf', general_name: 'twin' });
    const table = (await ok(['library', 'deployments'])).stdout;
    expect(table).toMatch(/^MODEL ID\s+NAME\s+FILE\s+GENERAL NAME\s+INSTANCE\s+STATUS\n/);
    expect(table).toMatch(/\nq4\s+twin-q4\s+twin-q4\.gguf\s+twin\s+cpu\s+LIVE\n/);
    expect(table).toMatch(/\nq8\s+twin 8-bit\s+twin-q8\.gguf\s+twin\s+cpu\s+LIVE\n/);

    for (const id of ['q4', 'q8']) await ok(['library', 'undeploy', id]);
  });

  it('refuses bad usage with exit 2', async () => {
    expect((await runCli(['library', 'deploy', 'tiny-chat'], env)).code).toBe(2);
    expect((await runCli(['library', 'deploy', 'tiny-chat', '--model-id', 'x', '--instance-type', 'tpu'], env)).code).toBe(2);
    expect((await runCli(['models', 'set-instance-type', 'x', 'gpu'], env)).code).toBe(2);
    expect((await runCli(['library', 'deploy', 'tiny-chat', '--model-id', 'x', '--name', ' '], env)).code).toBe(2);
    const speculative = await runCli(['library', 'deploy', 'tiny-chat', '--model-id', 'x', '--speculative', 'draft:tiny-chat.gguf'], env);
    expect(speculative.code).toBe(2);
    expect(speculative.stderr).toContain('--speculative must be ngram:<k> (prompt lookup) or draft:<k> (with --draft-model), k from 1 to 16');
  });

  it('deploys with --speculative ngram:k and shows it with the instance', async () => {
    expect((await ok(['library', 'deploy', 'tiny-chat', '--model-id', 'spec', '--speculative', 'ngram:3', '--wait'])).stdout).toBe('spec\n');
    const listed = JSON.parse((await ok(['library', 'deployments', '--json'])).stdout) as { deployments: Array<{ model_id: string; speculative: string | null; status: string }> };
    expect(listed.deployments.find((d) => d.model_id === 'spec')).toMatchObject({ speculative: 'ngram:3', status: 'LIVE' });
    expect((await ok(['library', 'deployments'])).stdout).toMatch(/\nspec\s+tiny-chat\s+tiny-chat\.gguf\s+\S+\s+cpu, ngram:3\s+LIVE\n/);
    await ok(['library', 'undeploy', 'spec']);
    // A draft model: the file's twin drafts for it (same vocabulary), draft:4 by default.
    expect((await ok(['library', 'deploy', 'tiny-chat', '--model-id', 'spec2', '--draft-model', 'twin-q4.gguf', '--wait'])).stdout).toBe('spec2\n');
    expect((await ok(['library', 'deployments'])).stdout).toMatch(/\nspec2\s+tiny-chat\s+tiny-chat\.gguf\s+\S+\s+cpu, draft:4 \(twin-q4\.gguf\)\s+LIVE\n/);
    await ok(['library', 'undeploy', 'spec2']);
  });
});
