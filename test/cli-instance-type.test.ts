// `platform models deploy realtime --instance-type cpu|cuda` (and the deploy file's
// realtime.instance_type), and `platform models set-instance-type` on a realtime model, through the
// real CLI against a real host process.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cudaUnavailableReason } from '../src/native/cuda-availability.js';
import { runCli } from './helpers/cli.js';
import { spawnHost, type ChildHost } from './helpers/child-host.js';
import { linearModel } from './helpers/models.js';
import { tempDir } from './helpers/paths.js';

const FEATURES = ['a', 'b', 'c'];
const cudaReason = cudaUnavailableReason();
let host: ChildHost;
let env: Record<string, string>;
let work: string;
let build: string;

beforeAll(async () => {
  host = await spawnHost();
  const key = (await runCli(['keys', 'create'], { DATA_DIR: host.dataDir })).stdout.trim();
  env = { PLATFORM_URL: host.url, PLATFORM_API_KEY: key, PLATFORM_CACHE_DIR: tempDir() };
  work = tempDir();
  fs.writeFileSync(path.join(work, 'm.onnx'), linearModel(FEATURES, 0));
  expect((await runCli(['models', 'create', '--model-id', 'inst'], env)).code).toBe(0);
  const built = await runCli(['models', 'build', '--model-id', 'inst', '--from-file', path.join(work, 'm.onnx'), '--feature-names', FEATURES.join(',')], env);
  expect(built.code, built.stderr).toBe(0);
  build = built.stdout.trim();
});
afterAll(async () => {
  host.proc.kill('SIGTERM');
  await host.exited;
});

const deployFile = (name: string, text: string) => {
  const p = path.join(work, name);
  fs.writeFileSync(p, text);
  return p;
};

describe('platform models deploy realtime --instance-type', () => {
  it('refuses a value other than cpu or cuda on the command line and in the file (exit 2)', async () => {
    const flag = await runCli(['models', 'deploy', 'realtime', '--model-id', 'inst', '--build-id', build, '--instance-type', 'tpu'], env);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--instance-type must be cpu or cuda, got "tpu"');
    const file = deployFile('bad.yaml', `model_id: inst\nbuild_id: ${build}\nrealtime:\n  instance_type: gpu\n`);
    const fromFile = await runCli(['models', 'deploy', 'realtime', '--from-file', file], env);
    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr).toContain('realtime.instance_type must be cpu or cuda');
  });

  it.skipIf(cudaReason === null)('reports the reason cuda is unavailable, from the flag or the file (exit 1)', async () => {
    const flag = await runCli(['models', 'deploy', 'realtime', '--model-id', 'inst', '--build-id', build, '--instance-type', 'cuda', '--wait'], env);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain(`instance type cuda is not available on this host: ${cudaReason}`);
    const file = deployFile('cuda.yaml', `model_id: inst\nbuild_id: ${build}\nrealtime:\n  instance_type: cuda\n`);
    const fromFile = await runCli(['models', 'deploy', 'realtime', '--from-file', file], env);
    expect(fromFile.code).toBe(1);
    expect(fromFile.stderr).toContain('instance type cuda is not available on this host');
    // The flag overrides the file.
    const overridden = await runCli(['models', 'deploy', 'realtime', '--from-file', file, '--instance-type', 'cpu', '--wait'], env);
    expect(overridden.code, overridden.stderr).toBe(0);
  });

  it('deploys on cpu, the default, and shows it', async () => {
    const res = await runCli(['models', 'deploy', 'realtime', '--model-id', 'inst', '--build-id', build, '--instance-type', 'cpu', '--wait'], env);
    expect(res.code, res.stderr).toBe(0);
    const got = await runCli(['models', 'get', 'inst', '--json'], env);
    const info = JSON.parse(got.stdout) as { live_deployment: { instance_type: string; traffic: { instanceTypes: Record<string, string> } } };
    expect(info.live_deployment.instance_type).toBe('cpu');
    expect(info.live_deployment.traffic.instanceTypes).toEqual({ default: 'cpu' });
    const plain = await runCli(['models', 'deploy', 'realtime', '--model-id', 'inst', '--build-id', build, '--wait'], env);
    expect(plain.code, plain.stderr).toBe(0);
    const after = JSON.parse((await runCli(['models', 'get', 'inst', '--json'], env)).stdout) as { live_deployment: { instance_type: string } };
    expect(after.live_deployment.instance_type).toBe('cpu');
  });
});

interface LiveJson {
  live_deployment: { deployment_id: string; action: string; instance_type: string; traffic: { instanceTypes: Record<string, string> } };
  deployment_in_progress: unknown;
}
const getModel = async (id: string) => JSON.parse((await runCli(['models', 'get', id, '--json'], env)).stdout) as LiveJson;

describe('platform models set-instance-type on a realtime model', () => {
  beforeAll(async () => {
    const res = await runCli(['models', 'deploy', 'realtime', '--model-id', 'inst', '--build-id', build, '--wait'], env);
    expect(res.code, res.stderr).toBe(0);
  });

  it('redeploys the live traffic on the type asked for and, with --wait, follows it until LIVE', async () => {
    const before = await getModel('inst');
    const res = await runCli(['models', 'set-instance-type', 'inst', 'cpu', '--wait'], env);
    expect(res.code, res.stderr).toBe(0);
    const id = res.stdout.trim();
    expect(id).toMatch(/^dep_/);
    expect(res.stderr).toMatch(new RegExp(`deployment ${id} \\(inst/default\\): LIVE\n$`));
    const after = await getModel('inst');
    expect(after.live_deployment.deployment_id).toBe(id);
    expect(after.live_deployment.deployment_id).not.toBe(before.live_deployment.deployment_id);
    expect(after.live_deployment).toMatchObject({ action: 'deploy', instance_type: 'cpu' });
    expect(after.live_deployment.traffic.instanceTypes).toEqual({ default: 'cpu' });
  });

  it('refuses --threads for a realtime model (exit 2), changing nothing', async () => {
    const before = await getModel('inst');
    const res = await runCli(['models', 'set-instance-type', 'inst', 'cpu', '--threads', '2'], env);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--threads applies to library models only; "inst" is a realtime model');
    expect(res.stdout).toBe('');
    expect(await getModel('inst')).toEqual(before);
  });

  it('refuses a bad type (exit 2) and an unknown model or one with nothing live (exit 1)', async () => {
    const bad = await runCli(['models', 'set-instance-type', 'inst', 'gpu'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('the instance type must be cpu or cuda');
    const unknown = await runCli(['models', 'set-instance-type', 'no-such-model', 'cpu'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('model "no-such-model" does not exist');
    expect((await runCli(['models', 'create', '--model-id', 'inst-idle'], env)).code).toBe(0);
    const idle = await runCli(['models', 'set-instance-type', 'inst-idle', 'cpu', '--wait'], env);
    expect(idle.code).toBe(1);
    expect(idle.stderr).toContain('model "inst-idle" has no live deployment');
  });

  it.skipIf(cudaReason === null)('reports the reason cuda is unavailable (exit 1); the model keeps serving on the cpu', async () => {
    const before = await getModel('inst');
    const res = await runCli(['models', 'set-instance-type', 'inst', 'cuda', '--wait'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`instance type cuda is not available on this host: ${cudaReason}`);
    expect(res.stdout).toBe('');
    expect(await getModel('inst')).toEqual(before);
  });

  it.skipIf(cudaReason !== null)('moves the model to cuda and back with --wait', async () => {
    for (const type of ['cuda', 'cpu']) {
      const res = await runCli(['models', 'set-instance-type', 'inst', type, '--wait'], env);
      expect(res.code, res.stderr).toBe(0);
      const live = (await getModel('inst')).live_deployment;
      expect(live.instance_type).toBe(type);
      expect(live.traffic.instanceTypes).toEqual({ default: type });
    }
  });
});
