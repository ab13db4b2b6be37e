// The LLM bench's support parts that decide its bandwidth figures: the weight bytes a batch-1
// decode step reads (bench/support/decode-bytes.ts), against sizes worked out here from the
// GGUF block layouts, and the read-bandwidth kernel's command line (bench/support/read-bandwidth.c:
// it runs, reads the whole buffer, refuses bad arguments). Timings are not checked.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import { decodeBytesPerToken } from '../bench/support/decode-bytes.js';
import { findNativeLlamaCpp } from '../bench/support/native-llama-cpp.js';
import { measureReadBandwidth } from '../bench/support/read-bandwidth.js';
import { gv, writeGguf, type GgufWriteTensor } from './helpers/gguf-writer.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-llm-support-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Bytes per block of 256 (K-quants) or 32 (Q8_0) values, from ggml-common.h's block structs.
const Q5_K_BLOCK = 176;
const Q6_K_BLOCK = 210;
const Q8_0_BLOCK = 34;

function model(file: string, tensors: GgufWriteTensor[]): string {
  const p = path.join(dir, file);
  writeGguf(p, { metadata: { 'general.architecture': gv.str('llama') }, tensors });
  return p;
}

describe('decodeBytesPerToken', () => {
  // [dim 512, vocab 1000] embedding; two layers of a Q5_K matrix [512, 768] and a Q8_0 [768, 512].
  const layers = (n: number): GgufWriteTensor[] =>
    Array.from({ length: n }, (_, l) => [
      { name: `blk.${l}.attn_norm.weight`, dims: [512], type: 'F32' as const, data: null },
      { name: `blk.${l}.ffn_up.weight`, dims: [512, 768], type: 'Q5_K' as const, data: null },
      { name: `blk.${l}.ffn_down.weight`, dims: [768, 512], type: 'Q8_0' as const, data: null },
    ]).flat();
  const layerBytes = 512 * 4 + ((512 * 768) / 256) * Q5_K_BLOCK + ((768 * 512) / 32) * Q8_0_BLOCK;

  it('counts one embedding row and every other tensor once', async () => {
    const file = model('untied.gguf', [
      { name: 'token_embd.weight', dims: [512, 1000], type: 'Q6_K', data: null },
      ...layers(2),
      { name: 'output_norm.weight', dims: [512], type: 'F32', data: null },
      { name: 'output.weight', dims: [512, 1000], type: 'Q6_K', data: null },
    ]);
    const embeddingRow = (512 / 256) * Q6_K_BLOCK;
    const output = ((512 * 1000) / 256) * Q6_K_BLOCK;
    const got = await decodeBytesPerToken(file);
    expect(got.perToken).toBe(embeddingRow + 2 * layerBytes + 512 * 4 + output);
    expect(got.byType).toEqual({
      Q6_K: embeddingRow + output,
      F32: 3 * 512 * 4,
      Q5_K: 2 * ((512 * 768) / 256) * Q5_K_BLOCK,
      Q8_0: 2 * ((768 * 512) / 32) * Q8_0_BLOCK,
    });
  });

  it('counts the whole embedding when the output projection is tied to it', async () => {
    const file = model('tied.gguf', [
      { name: 'token_embd.weight', dims: [512, 1000], type: 'Q8_0', data: null },
      ...layers(1),
      { name: 'output_norm.weight', dims: [512], type: 'F32', data: null },
    ]);
    const got = await decodeBytesPerToken(file);
    expect(got.perToken).toBe(((512 * 1000) / 32) * Q8_0_BLOCK + layerBytes + 512 * 4);
  });
});

describe('read-bandwidth kernel', () => {
  it('reads the whole buffer on each pass and reports every pass', () => {
    const bw = measureReadBandwidth(2, 8, 3);
    expect(bw.bufferBytes).toBe(8 << 20);
    expect(bw.threads).toBe(2);
    expect(bw.passesGBs).toHaveLength(3);
    for (const x of bw.passesGBs) expect(x).toBeGreaterThan(0);
    expect(bw.maxGBs).toBe(Math.max(...bw.passesGBs));
    expect([...bw.passesGBs].sort((a, b) => a - b)[1]).toBe(bw.medianGBs);
  });

  it('refuses bad arguments with a usage message', () => {
    measureReadBandwidth(1, 1, 1); // compiled
    const bin = fileURLToPath(new URL('../bench/out/read-bandwidth', import.meta.url));
    for (const args of [['0', '1', '1'], ['8', '0', '1'], ['8', '1', '0'], ['8', '1']]) {
      const res = spawnSync(bin, args, { encoding: 'utf8' });
      expect(res.status).toBe(2);
      expect(res.stderr).toMatch(/usage|bad arguments/);
    }
  });
});

describe('findNativeLlamaCpp', () => {
  it('names LLAMA_CPP_BIN_DIR when it holds no llama-bench', () => {
    const before = process.env.LLAMA_CPP_BIN_DIR;
    process.env.LLAMA_CPP_BIN_DIR = dir;
    try {
      expect(() => findNativeLlamaCpp()).toThrow(/LLAMA_CPP_BIN_DIR=.* holds no llama-bench and llama-quantize/);
    } finally {
      if (before === undefined) delete process.env.LLAMA_CPP_BIN_DIR;
      else process.env.LLAMA_CPP_BIN_DIR = before;
    }
  });
});
