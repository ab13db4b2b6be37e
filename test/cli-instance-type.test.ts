// `platform models deploy realtime --instance-type cpu|cuda` (and the deploy file's
// realtime.instance_type) through the real CLI against a real host process.
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
        const got = await runCli(['models', 'get', 'inst'], env);
    const info = JSON.parse(got.stdout) as { live_deployment: { instance_type: string; traffic: { instanceTypes: Record<string, string> } } };
    expect(info.live_deployment.instance_type).toBe('cpu');
    expect(info.live_deployment.traffic.instanceTypes).toEqual({ default: 'cpu' });
    const plain = await runCli(['models', 'deploy', 'realtime', '--model-id', 'inst', '--build-id', build, '--wait'], env);
    expect(plain.code, plain.stderr).toBe(0);
    const after = JSON.parse((await runCli(['models', 'get', 'inst'], env)).stdout) as { live_deployment: { instance_type: string } };
    expect(after.live_deployment.instance_type).toBe('cpu');
  });
});
