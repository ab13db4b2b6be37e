// Logits of the native forward pass against the f64 TypeScript reference (test/helpers/
// llm-reference.ts) on small random GGUF models, for both architectures and every tensor type.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadModel, type LoadModelOptions } from '../src/llm/engine/index.js';
import { writeGguf, type TinyModelOptions } from './helpers/gguf-writer.js';
import type { QuantType } from './helpers/ggml-quants.js';
import { engineLogits, seededPrompt as prompt, worstRelativeError as compare } from './helpers/engine-logits.js';
import { plainVocab, referenceLogits, referenceModel, relativeError } from './helpers/llm-reference.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llm-engine-forward-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let fileNo = 0;
function build(o: TinyModelOptions) {
  const ref = referenceModel(o);
  const file = path.join(dir, `m${fileNo++}.gguf`);
  writeGguf(file, ref.model.spec);
  return { ...ref, file };
}

const small = { vocab: plainVocab(96), nEmbd: 32, nLayer: 2, nHead: 4, nFf: 48 } as const;

describe('f32 forward pass matches the reference (1e-4 relative)', () => {
  // f32 weights and activations: the only differences are f32 rounding and summation order.
  it('llama: grouped-query attention, separate output matrix, adjacent-pair RoPE', async () => {
    const m = build({ ...small, arch: 'llama', nHeadKv: 2, seed: 11 });
    const tokens = prompt(19, 96, 3);
    const { logits, info } = await engineLogits(m.file, tokens);
    expect(info.architecture).toBe('llama');
    expect(info.ropeStyle).toBe('adjacent');
    expect(info.tiedOutput).toBe(false);
    expect(info).toMatchObject({ expertCount: 0, expertUsedCount: 0, expertFeedForwardLength: 0 });
    expect(info.headCountKv).toBe(2);
    expect(compare(logits, referenceLogits(m.config, m.weights, tokens), 96)).toBeLessThan(1e-4);
  });

  it('qwen2: QKV biases, NeoX RoPE, tied output, rope.freq_base and rms epsilon honoured', async () => {
    const m = build({ ...small, arch: 'qwen2', nHeadKv: 1, tiedOutput: true, seed: 12, ropeFreqBase: 500, rmsEps: 1e-3 });
    const tokens = prompt(17, 96, 4);
    const { logits, info } = await engineLogits(m.file, tokens);
    expect(info.ropeStyle).toBe('neox');
    expect(info.tiedOutput).toBe(true);
    expect(info.ropeFreqBase).toBe(500);
    expect(compare(logits, referenceLogits(m.config, m.weights, tokens), 96)).toBeLessThan(1e-4);
  });

  it('the wrong RoPE form would be caught: llama logits differ from a NeoX reference', async () => {
    const m = build({ ...small, arch: 'llama', seed: 13 });
    const tokens = prompt(12, 96, 5);
    const { logits } = await engineLogits(m.file, tokens);
    const neox = referenceLogits({ ...m.config, ropeStyle: 'neox' }, m.weights, tokens);
    expect(compare(logits, neox, 96)).toBeGreaterThan(1e-2);
  });

  it('chunked prefill (3 tokens per step), every KV block size and thread count give the same logits', async () => {
    const m = build({ ...small, arch: 'llama', nHeadKv: 2, seed: 14 });
    const tokens = prompt(23, 96, 6);
    const expected = referenceLogits(m.config, m.weights, tokens);
    for (const options of [{ maxBatchTokens: 3 }, { kvBlockSize: 1 }, { kvBlockSize: 7, threads: 1 }] as LoadModelOptions[]) {
      const { logits } = await engineLogits(m.file, tokens, options);
      expect(compare(logits, expected, 96)).toBeLessThan(1e-4);
    }
  });

  it('the last-position logits equal the all-position row', async () => {
    const m = build({ ...small, arch: 'qwen2', seed: 15 });
    const tokens = prompt(9, 96, 7);
    const model = await loadModel(m.file, { threads: 1 });
    try {
      const last = await model.logits(tokens);
      const all = await model.logits(tokens, { allPositions: true });
      expect(last.length).toBe(96);
      // (one row goes through gemv, nine through gemm: the summation order differs)
      expect(relativeError(last, all.subarray(8 * 96))).toBeLessThan(1e-5);
    } finally {
      await model.unload();
    }
  });
});

// Quantized types: K-quant rows need multiples of 256, so these models are 256 wide.
// Tolerances (max |engine - reference| / max |reference| over all positions' logits), with the
// reference run on the dequantized weights so only the engine's own arithmetic is measured:
//  - F16, BF16: weights are exact after conversion, activations stay f32: 1e-4 as for F32.
//  - Q8_0, Q4_0, Q4_K, Q6_K: activations are rounded to 8 bits per block before each integer
//    dot product (as llama.cpp does): a relative rounding error of about 2^-8 per element,
//    averaging out in the dot products to ~0.5% per matmul and compounding over 7 matmuls per
//    layer; observed 2.0-2.6% on these models (seed 21). 5e-2 leaves headroom yet still catches
//    any layout or scale bug (those give errors of order 1). The SIMD and scalar kernels must
//    agree far more tightly (observed < 1e-6): same integer sums, different float order.
// (The newer types, Q4_1 / Q5_0 / Q5_1 / Q2_K / Q3_K / Q5_K / IQ4_NL / IQ4_XS / MXFP4, are
// test/llm-tensor-types.test.ts's.)
const TOLERANCE: Partial<Record<QuantType, number>> = { F32: 1e-4, F16: 1e-4, BF16: 1e-4, Q8_0: 5e-2, Q4_0: 5e-2, Q4_K: 5e-2, Q6_K: 5e-2 };
const wide = { vocab: plainVocab(64), nEmbd: 256, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 512 } as const;

describe.each(['F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'] as QuantType[])('%s weights', (type) => {
  it(`match the reference on dequantized weights within ${TOLERANCE[type]}, at every SIMD level`, async () => {
    const m = build({ ...wide, arch: type === 'Q4_0' || type === 'Q6_K' ? 'qwen2' : 'llama', weightType: type, seed: 21 });
    const tokens = prompt(10, 64, 8);
    const expected = referenceLogits(m.config, m.weights, tokens);
    const scalar = await engineLogits(m.file, tokens, { simd: 'scalar' });
    expect(scalar.info.tensorTypes[type]).toBeGreaterThan(0);
    expect(scalar.info.kernels).toBe('scalar');
    const simd = await engineLogits(m.file, tokens);
    const err = compare(simd.logits, expected, 64);
    if (process.env['LLM_TEST_VERBOSE']) console.log(type, err, relativeError(simd.logits, scalar.logits));
    expect(err).toBeLessThan(TOLERANCE[type]!);
    expect(compare(scalar.logits, expected, 64)).toBeLessThan(TOLERANCE[type]!);
    // The SIMD kernels compute the same integer sums as the scalar ones: only float order differs.
    expect(relativeError(simd.logits, scalar.logits)).toBeLessThan(1e-4);
  });
});
