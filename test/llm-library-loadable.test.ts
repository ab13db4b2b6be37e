// Files the engine cannot load are marked in the catalogue, with why, before anyone deploys them:
// an architecture it does not run, or tensors of a type it does not decode. The catalogue tells it
// from the header alone (src/llm/library/loadable.ts); `platform library list` prints the reason;
// a deploy of such a file is a 400 naming it; and the engine's own load error names the type by
// its ggml name and lists the supported ones.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel } from '../src/llm/engine/index.js';
import { runCli } from './helpers/cli.js';
import { spawnHost, type ChildHost } from './helpers/child-host.js';
import { tinyModel, writeGguf, type GgufWriteSpec } from './helpers/gguf-writer.js';
import { spmVocab } from './helpers/llm-models.js';
import { tempDir } from './helpers/paths.js';

const SUPPORTED = 'F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4';
let host: ChildHost;
let env: Record<string, string>;
let modelsDir: string;

function spec(): GgufWriteSpec {
  return tinyModel({ arch: 'llama', vocab: spmVocab(), nEmbd: 64, nLayer: 1, nHead: 4, nHeadKv: 2, nFf: 128, nCtx: 256, seed: 5, name: 'tiny' }).spec;
}

beforeAll(async () => {
  modelsDir = tempDir();
  writeGguf(path.join(modelsDir, 'fine.gguf'), spec());
  // A Mamba file: its header says so (the weights are the llama ones, which does not matter here).
  const mamba = spec();
  writeGguf(path.join(modelsDir, 'mamba.gguf'), { ...mamba, metadata: { ...mamba.metadata, 'general.architecture': 'mamba' } });
  // Tensors in types the engine does not decode: IQ2_XXS (one) and IQ3_S (two).
  const mixed = spec();
  writeGguf(path.join(modelsDir, 'iq.gguf'), {
    ...mixed,
    tensors: [
      ...mixed.tensors!,
      { name: 'extra.a.weight', dims: [256, 2], type: 'IQ2_XXS', data: null },
      { name: 'extra.b.weight', dims: [256, 1], type: 'IQ3_S', data: null },
      { name: 'extra.c.weight', dims: [256, 1], type: 'IQ3_S', data: null },
    ],
  });
  host = await spawnHost({ MODELS_DIR: modelsDir });
  const key = (await runCli(['keys', 'create'], { DATA_DIR: host.dataDir })).stdout.trim();
  env = { PLATFORM_URL: host.url, PLATFORM_API_KEY: key, PLATFORM_CACHE_DIR: tempDir() };
}, 60_000);
afterAll(async () => {
  host?.proc.kill('SIGTERM');
  await host?.exited;
});

describe('files the engine cannot load', () => {
  it('are marked in the catalogue with the reason, and listed by the CLI', async () => {
    const list = JSON.parse((await runCli(['library', 'list', '--json'], env)).stdout) as { models: Array<{ file: string; unsupported: string | null }> };
    const why = Object.fromEntries(list.models.map((m) => [m.file, m.unsupported]));
    expect(why).toEqual({
      'fine.gguf': null,
      'mamba.gguf': "architecture 'mamba' is not supported (supported: llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3, bert, nomic-bert)",
      'iq.gguf': `tensor types IQ2_XXS (1 tensor), IQ3_S (2 tensors) are not supported (supported: ${SUPPORTED})`,
    });
    const table = await runCli(['library', 'list'], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/\ntiny\s+fine\.gguf\s.*\schat\n/);
    expect(table.stdout).toMatch(/mamba\.gguf\s.*cannot load \(below\)/);
    expect(table.stdout).toContain(`cannot load iq.gguf: tensor types IQ2_XXS (1 tensor), IQ3_S (2 tensors) are not supported (supported: ${SUPPORTED})\n`);
    expect(table.stdout).toContain("cannot load mamba.gguf: architecture 'mamba' is not supported");
  });

  it('are refused at deploy with a 400 that names the file and why, from the CLI and the API', async () => {
    const refused = await runCli(['library', 'deploy', 'iq.gguf', '--model-id', 'iq'], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toBe(`platform: "iq.gguf" cannot be loaded: tensor types IQ2_XXS (1 tensor), IQ3_S (2 tensors) are not supported (supported: ${SUPPORTED}) (HTTP 400)\n`);
    const mamba = await runCli(['library', 'deploy', 'mamba.gguf', '--model-id', 'mamba'], env);
    expect(mamba.stderr).toContain(`"mamba.gguf" cannot be loaded: architecture 'mamba' is not supported`);
    // Nothing was made: the model ids are free.
    const deployments = JSON.parse((await runCli(['library', 'deployments', '--json'], env)).stdout) as { deployments: unknown[] };
    expect(deployments.deployments).toEqual([]);
  });

  it('fail to load in the engine with the type named and the supported ones listed', async () => {
    await expect(loadModel(path.join(modelsDir, 'iq.gguf'))).rejects.toThrow(`unsupported tensor type IQ2_XXS (16) for tensor 'extra.a.weight' (supported: ${SUPPORTED})`);
    expect(fs.existsSync(path.join(modelsDir, 'fine.gguf'))).toBe(true);
    const fine = await loadModel(path.join(modelsDir, 'fine.gguf'), { threads: 1 });
    await fine.unload();
  });
});
