// The GGML type table is written twice because two languages need it: the TypeScript GGUF reader
// (src/llm/gguf/ggml-types.ts) sizes every tensor of a file before any addon is loaded, and the
// engine (native/ggml/types.h) decodes the types it supports. This holds the two equal: every
// type the engine supports has the same id, name, block size and block bytes in the reader's
// table, and the engine supports the quantizations the README promises.
import { describe, expect, it } from 'vitest';

import { ENGINE_TENSOR_TYPES, ggmlTypeTraits } from '../src/llm/gguf/ggml-types.js';
import { loadTestingAddon } from './helpers/testing-addon.js';

const engineTypes = loadTestingAddon().ggmlTypes();

describe('the GGML type table', () => {
  it('the engine supports the types the README lists, which the catalogue calls loadable', () => {
    expect(engineTypes.map((t) => t.name).sort()).toEqual(['BF16', 'F16', 'F32', 'Q4_0', 'Q4_K', 'Q6_K', 'Q8_0']);
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
