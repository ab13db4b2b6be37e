// Bad GGUF files are load errors (LlmEngineError 'load_failed' with a one-line message), never
// crashes: truncations at many offsets, a flipped magic, unknown tensor types, unsupported
// architectures, missing or misshapen tensors. Also: v2 files and other alignments load.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LlmEngineError, loadModel } from '../src/llm/engine/index.js';
import { encodeGguf, type GgufWriteSpec } from './helpers/gguf-writer.js';
import { plainVocab, referenceModel } from './helpers/llm-reference.js';
import { rng } from './helpers/random.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llm-engine-errors-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const base = referenceModel({ arch: 'llama', vocab: plainVocab(64), nEmbd: 32, nLayer: 1, nHead: 4, nFf: 32, seed: 2 }).model.spec;
let n = 0;
function write(bytes: Uint8Array): string {
  const file = path.join(dir, `f${n++}.gguf`);
  fs.writeFileSync(file, bytes);
  return file;
}

async function loadError(file: string): Promise<LlmEngineError> {
  try {
    const m = await loadModel(file, { threads: 1 });
    await m.unload();
  } catch (e) {
    expect(e).toBeInstanceOf(LlmEngineError);
    expect((e as LlmEngineError).code).toBe('load_failed');
    expect((e as Error).message).not.toContain('\n');
    return e as LlmEngineError;
  }
  throw new Error(`${file} loaded`);
}

function withSpec(change: (s: GgufWriteSpec) => GgufWriteSpec): string {
  return write(encodeGguf(change({ ...base, metadata: { ...base.metadata }, tensors: [...(base.tensors ?? [])] })));
}

describe('GGUF validation', () => {
  const good = encodeGguf(base);

  it('the untouched file, a v2 file and a 64-byte-aligned file load', async () => {
    for (const bytes of [good, encodeGguf({ ...base, version: 2 }), encodeGguf({ ...base, alignment: 64 })]) {
      const m = await loadModel(write(bytes), { threads: 1 });
      expect(m.info().ggufVersion).toBeGreaterThanOrEqual(2);
      await m.unload();
    }
  });

  it('a file truncated anywhere is a load error', async () => {
    const offsets = new Set<number>([0, 3, 4, 8, 16, 23, 24, 25, 40, 100, 1000, good.length - 1]);
    for (let i = 1; i < 24; i++) offsets.add(Math.floor((good.length * i) / 24));
    for (const off of offsets) {
      const e = await loadError(write(good.subarray(0, off)));
      expect(e.message).toMatch(/truncated|not a GGUF|bytes|past the end|corrupt|cannot/);
    }
  });

  it('a flipped magic, an unknown version, an unknown tensor type', async () => {
    const magic = good.slice();
    magic[0] = 0x47 ^ 0xff;
    expect((await loadError(write(magic))).message).toContain('bad magic');
    const version = good.slice();
    version[4] = 9;
    expect((await loadError(write(version))).message).toContain('unsupported GGUF version 9');
    // token_embd.weight's info: name, n_dims (2), two u64 dims, then the u32 type.
    const name = Buffer.from('token_embd.weight');
    const at = Buffer.from(good).indexOf(name) + name.length + 4 + 16;
    const typed = good.slice();
    new DataView(typed.buffer).setUint32(at, 99, true);
    expect((await loadError(write(typed))).message).toContain('unsupported tensor type 99');
  });

  it('an unsupported architecture, a missing tensor, a misshapen tensor, missing metadata', async () => {
    const arch = withSpec((s) => ({ ...s, metadata: { ...s.metadata, 'general.architecture': 'gpt2' } }));
    expect((await loadError(arch)).message).toContain("unsupported architecture 'gpt2'");
    const missing = withSpec((s) => ({ ...s, tensors: s.tensors!.filter((t) => t.name !== 'blk.0.ffn_up.weight') }));
    expect((await loadError(missing)).message).toContain("missing tensor 'blk.0.ffn_up.weight'");
    const shape = withSpec((s) => ({
      ...s,
      tensors: s.tensors!.map((t) => (t.name === 'blk.0.attn_k.weight' ? { ...t, dims: [32, 16], data: (t.data as Float32Array).subarray(0, 512) } : t)),
    }));
    expect((await loadError(shape)).message).toContain("tensor 'blk.0.attn_k.weight' has shape [32, 16], expected [32, 32]");
    const meta = withSpec((s) => {
      const m = { ...s.metadata };
      delete m['llama.block_count'];
      return { ...s, metadata: m };
    });
    expect((await loadError(meta)).message).toContain("missing metadata key 'llama.block_count'");
  });

  it('a missing file or a directory is a load error', async () => {
    expect((await loadError(path.join(dir, 'nope.gguf'))).message).toContain('cannot open');
    expect((await loadError(dir)).message).toContain('not a regular file');
  });

  it('random corruption of the header never crashes', async () => {
    const rnd = rng(7);
    const headerEnd = Math.min(good.length, 4096);
    let loaded = 0;
    let refused = 0;
    for (let i = 0; i < 40; i++) {
      const bytes = good.slice();
      for (let k = 0; k < 4; k++) bytes[8 + Math.floor(rnd() * (headerEnd - 8))] = Math.floor(rnd() * 256);
      try {
        const m = await loadModel(write(bytes), { threads: 1 });
        await m.unload(); // some flips only touch names or values we do not check
        loaded++;
      } catch (e) {
        expect(e).toBeInstanceOf(LlmEngineError);
        expect((e as LlmEngineError).code).toBe('load_failed');
        expect((e as Error).message).not.toContain('\n');
        refused++;
      }
    }
    // Seed 7 refuses 32 of the 40 and loads 8: both paths are taken.
    expect(refused).toBeGreaterThan(20);
    expect(loaded).toBeGreaterThan(2);
  });
});

const FIXTURE = path.resolve('../shared/fixtures/stories260K.gguf');
describe.skipIf(!fs.existsSync(FIXTURE))('stories260K.gguf corrupted', () => {
  it('truncations are load errors', async () => {
    const real = fs.readFileSync(FIXTURE);
    for (const frac of [0.001, 0.01, 0.1, 0.5, 0.9, 0.9999]) {
      await loadError(write(real.subarray(0, Math.floor(real.length * frac))));
    }
  });
});
