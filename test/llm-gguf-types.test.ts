// The GGML type table is written twice because two languages need it: the TypeScript GGUF reader
// (src/llm/gguf/ggml-types.ts) sizes every tensor of a file before any addon is loaded, and the
// engine (native/ggml/types.h) decodes the types it supports. This holds the two equal: every
// type the engine supports has the same id, name, block size and block bytes in the reader's
// table, and the engine supports the quantizations the README promises. And the engine's
// dequantize_row, the host reference its CPU kernels and CUDA decoders are checked against, gives
// back ggml's own floats, bit for bit, for ggml's own blocks (test/data/ggml-quants-reference.json,
// recorded from libggml by scripts/oracle), as the test helpers' dequantizers do.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

import { ENGINE_TENSOR_TYPES, GgmlType, ggmlTypeTraits, type GgmlTypeName } from '../src/llm/gguf/ggml-types.js';
import { dequantize, type QuantType } from './helpers/ggml-quants.js';
import { loadTestingAddon } from './helpers/testing-addon.js';

const addon = loadTestingAddon();
const engineTypes = addon.ggmlTypes();
const DATA = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'data');

describe('the GGML type table', () => {
  it('the engine supports the types the README lists, which the catalogue calls loadable', () => {
    expect(engineTypes.map((t) => t.name).sort()).toEqual(
      ['BF16', 'F16', 'F32', 'IQ4_NL', 'IQ4_XS', 'MXFP4', 'Q2_K', 'Q3_K', 'Q4_0', 'Q4_1', 'Q4_K', 'Q5_0', 'Q5_1', 'Q5_K', 'Q6_K', 'Q8_0'].sort(),
    );
    expect([...ENGINE_TENSOR_TYPES].sort()).toEqual(engineTypes.map((t) => t.name).sort());
  });

  it('every type the engine supports has the same geometry in the reader', () => {
    for (const t of engineTypes) {
      const reader = ggmlTypeTraits(t.id);
      expect(reader, `type id ${t.id}`).toBeDefined();
      expect({ id: reader!.id, name: reader!.name, blockElements: reader!.blockSize, blockBytes: reader!.typeSize }).toEqual(t);
    }
  });
});

describe("dequantization gives ggml's floats", () => {
  const ref = JSON.parse(fs.readFileSync(path.join(DATA, 'ggml-quants-reference.json'), 'utf8')) as {
    inputs: Record<string, string>;
    results: Record<string, Record<string, { bytes: string; dequantized: string }>>;
  };
  const bytesOf = (b64: string) => new Uint8Array(Buffer.from(b64, 'base64'));

  it('the reference covers every quantized type the engine supports', () => {
    const quantized = ENGINE_TENSOR_TYPES.filter((t) => t !== 'F32');
    expect(Object.keys(ref.results).sort()).toEqual([...quantized].sort());
  });

  for (const [type, byInput] of Object.entries(ref.results)) {
    for (const [input, r] of Object.entries(byInput)) {
      it(`${type}, "${input}" rows: the engine's dequantize_row and the test helpers' are to_float's bits`, () => {
        const n = bytesOf(ref.inputs[input]!).length / 4;
        const blocks = bytesOf(r.bytes);
        const want = Buffer.from(bytesOf(r.dequantized));
        const engine = addon.ggmlDequantize(GgmlType[type as GgmlTypeName], blocks, n);
        expect(Buffer.from(engine.buffer, engine.byteOffset, engine.byteLength).equals(want)).toBe(true);
        const helper = dequantize(type as QuantType, blocks, n);
        expect(Buffer.from(helper.buffer, helper.byteOffset, helper.byteLength).equals(want)).toBe(true);
      });
    }
  }

  it('refuses blocks it was not given', () => {
    expect(() => addon.ggmlDequantize(GgmlType.Q5_K, new Uint8Array(175), 256)).toThrow('n must be whole blocks within bytes');
    expect(() => addon.ggmlDequantize(GgmlType.IQ2_XXS, new Uint8Array(66), 256)).toThrow('unsupported type id 16');
  });
});
