// The library commands of the real `platform` binary against a real host process.
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

  it('refuses bad usage with exit 2', async () => {
    expect((await runCli(['library', 'deploy', 'tiny-chat'], env)).code).toBe(2);
    expect((await runCli(['library', 'deploy', 'tiny-chat', '--model-id', 'x', '--instance-type', 'tpu'], env)).code).toBe(2);
    expect((await runCli(['models', 'set-instance-type', 'x', 'gpu'], env)).code).toBe(2);
  });
});
