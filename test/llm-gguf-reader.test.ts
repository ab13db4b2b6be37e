// The GGUF metadata reader: every value type and array type round-trips through the test writer,
// tensor infos come back with ggml's shapes, offsets and sizes, a multi-GB file is read without
// touching its tensor data, and corrupt input (random bytes, every truncation, absurd counts and
// lengths) fails fast with a one-line GgufError. The real fixture files are read when present.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  GgufError,
  GgufMetadata,
  modelInfo,
  parseGguf,
  readGguf,
  type GgufFile,
} from '../src/llm/gguf/index.js';
import { encodeGguf, gv, seededRandom, tinyModel, writeGguf, type GgufWriteSpec } from './helpers/gguf-writer.js';
import { tempDir } from './helpers/paths.js';
import { sentencePieceVocab } from './helpers/tiny-vocab.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURES = path.resolve(ROOT, '../shared/fixtures');
const fixturesPresent = fs.existsSync(path.join(FIXTURES, 'stories260K.gguf'));
if (!fixturesPresent) console.warn(`skipping the GGUF fixture tests: ${FIXTURES} is absent`);

const entry = (f: GgufFile, key: string) => f.entries.find((e) => e.key === key);

/** Parses and returns the GgufError (failing the test if it parses or throws something else). */
async function refusal(bytes: Uint8Array): Promise<GgufError> {
  try {
    await parseGguf(bytes);
  } catch (e) {
    expect(e).toBeInstanceOf(GgufError);
    expect((e as Error).message).not.toContain('\n');
    return e as GgufError;
  }
  throw new Error('expected a GgufError');
}

/** A little-endian byte builder for hand-made (broken) files. */
function bytesOf(...parts: (number | bigint | string | Uint8Array | ['u32', number] | ['u64', bigint | number] | ['u8', number])[]): Uint8Array {
  const chunks: Uint8Array[] = [];
  for (const p of parts) {
    if (typeof p === 'string') chunks.push(new TextEncoder().encode(p));
    else if (p instanceof Uint8Array) chunks.push(p);
    else if (Array.isArray(p)) {
      const [kind, v] = p;
      const b = new DataView(new ArrayBuffer(kind === 'u64' ? 8 : kind === 'u32' ? 4 : 1));
      if (kind === 'u64') b.setBigUint64(0, BigInt(v), true);
      else if (kind === 'u32') b.setUint32(0, Number(v), true);
      else b.setUint8(0, Number(v));
      chunks.push(new Uint8Array(b.buffer));
    } else throw new Error('use a tagged tuple for numbers');
  }
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
const gstr = (s: string) => bytesOf(['u64', new TextEncoder().encode(s).length], s);
const header = (nTensors: number | bigint, nKv: number | bigint, version = 3) =>
  bytesOf('GGUF', ['u32', version], ['u64', nTensors], ['u64', nKv]);

describe('metadata values', () => {
  it('reads every scalar and array type with its GGUF type', async () => {
    const spec: GgufWriteSpec = {
      metadata: {
        'general.architecture': 'llama',
        u8: gv.u8(255),
        i8: gv.i8(-128),
        u16: gv.u16(65535),
        i16: gv.i16(-32768),
        u32: gv.u32(4294967295),
        i32: gv.i32(-2147483648),
        f32: gv.f32(0.1),
        f64: gv.f64(0.1),
        bool_t: true,
        bool_f: false,
        str: 'héllo ✓ 😀',
        empty: '',
        u64: gv.u64(2n ** 64n - 1n),
        i64: gv.i64(-(2n ** 63n)),
        'arr.u8': gv.arr('UINT8', [0, 255]),
        'arr.i8': gv.arr('INT8', [-1, 1]),
        'arr.u16': gv.arr('UINT16', [1, 65535]),
        'arr.i16': gv.arr('INT16', [-2, 2]),
        'arr.u32': new Uint32Array([7, 4294967295]),
        'arr.i32': new Int32Array([-7, 7]),
        'arr.f32': new Float32Array([1.5, -2.25]),
        'arr.f64': gv.arr('FLOAT64', [Math.PI]),
        'arr.u64': gv.arr('UINT64', [2n ** 63n]),
        'arr.i64': gv.arr('INT64', [-5n]),
        'arr.bool': gv.arr('BOOL', [true, false, true]),
        'arr.str': ['a', '', 'ü', '日本'],
        'arr.empty': gv.arr('INT32', []),
      },
    };
    const f = await parseGguf(encodeGguf(spec));
    expect(f.version).toBe(3);
    expect(f.entries.map((e) => e.key)).toEqual(Object.keys(spec.metadata));
    const v = (k: string) => entry(f, k)!.value;
    expect([v('u8'), v('i8'), v('u16'), v('i16'), v('u32'), v('i32')]).toEqual([255, -128, 65535, -32768, 4294967295, -2147483648]);
    expect(v('f32')).toBe(Math.fround(0.1));
    expect(v('f64')).toBe(0.1);
    expect([v('bool_t'), v('bool_f'), v('str'), v('empty')]).toEqual([true, false, 'héllo ✓ 😀', '']);
    expect([v('u64'), v('i64')]).toEqual([2n ** 64n - 1n, -(2n ** 63n)]);
    expect(entry(f, 'u64')!.type).toBe('UINT64');
    expect(v('arr.u8')).toEqual(new Uint8Array([0, 255]));
    expect(v('arr.i8')).toEqual(new Int8Array([-1, 1]));
    expect(v('arr.u16')).toEqual(new Uint16Array([1, 65535]));
    expect(v('arr.i16')).toEqual(new Int16Array([-2, 2]));
    expect(v('arr.u32')).toEqual(new Uint32Array([7, 4294967295]));
    expect(v('arr.i32')).toEqual(new Int32Array([-7, 7]));
    expect(v('arr.f32')).toEqual(new Float32Array([1.5, -2.25]));
    expect(v('arr.f64')).toEqual(new Float64Array([Math.PI]));
    expect(v('arr.u64')).toEqual(new BigUint64Array([2n ** 63n]));
    expect(v('arr.i64')).toEqual(new BigInt64Array([-5n]));
    expect(v('arr.bool')).toEqual([true, false, true]);
    expect(v('arr.str')).toEqual(['a', '', 'ü', '日本']);
    expect(v('arr.empty')).toEqual(new Int32Array([]));
    expect(entry(f, 'arr.str')).toMatchObject({ type: 'ARRAY', elementType: 'STRING' });
  });

  it('reads a 200k-entry string array that spans many read chunks', async () => {
    const tokens = Array.from({ length: 200_000 }, (_, i) => (i % 7 === 0 ? `▁tok${i}` : `t${i}`));
    const f = await parseGguf(encodeGguf({ metadata: { 'tokenizer.ggml.tokens': tokens, after: gv.u32(9) } }));
    expect(entry(f, 'tokenizer.ggml.tokens')!.value).toEqual(tokens);
    expect(entry(f, 'after')!.value).toBe(9);
  });

  it('GgufMetadata gives typed values and names the key and type when they are wrong', async () => {
    const f = await parseGguf(
      encodeGguf({ metadata: { name: 'x', n: gv.u64(12), m: gv.i32(-3), big: gv.u64(2n ** 60n), eps: gv.f32(1e-5), flag: true, list: ['a'] } }),
    );
    const m = GgufMetadata.of(f);
    expect(m.string('name')).toBe('x');
    expect(m.integer('n')).toBe(12);
    expect(m.integer('m')).toBe(-3);
    expect(m.number('eps')).toBe(Math.fround(1e-5));
    expect(m.number('n')).toBe(12);
    expect(m.bool('flag')).toBe(true);
    expect(m.stringArray('list')).toEqual(['a']);
    expect(m.optString('absent')).toBeUndefined();
    expect(() => m.string('absent')).toThrow(new GgufError('metadata key "absent" is missing'));
    expect(() => m.string('n')).toThrow(new GgufError('metadata key "n" is UINT64, expected a string'));
    expect(() => m.integer('eps')).toThrow(new GgufError('metadata key "eps" is FLOAT32, expected an integer'));
    expect(() => m.stringArray('name')).toThrow(new GgufError('metadata key "name" is STRING, expected an array of strings'));
    expect(() => m.integer('big')).toThrow(/too large/);
  });
});

describe('tensor infos', () => {
  const vocab = sentencePieceVocab();

  it('come back with ggml shapes, types, aligned offsets and byte sizes', async () => {
    const { spec } = tinyModel({ arch: 'llama', vocab, nEmbd: 256, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 512, weightType: 'Q4_K', embeddingType: 'Q6_K' });
    const bytes = encodeGguf(spec);
    const f = await parseGguf(bytes);
    expect(f.tensors.map((t) => t.name)).toEqual(spec.tensors!.map((t) => t.name));
    const byName = new Map(f.tensors.map((t) => [t.name, t]));
    expect(byName.get('token_embd.weight')).toMatchObject({ dims: [256, vocab.tokens.length], type: 'Q6_K', nElements: 256 * vocab.tokens.length });
    expect(byName.get('token_embd.weight')!.byteSize).toBe(vocab.tokens.length * 210);
    expect(byName.get('blk.1.attn_k.weight')).toMatchObject({ dims: [256, 128], type: 'Q4_K', byteSize: 128 * 144 });
    expect(byName.get('blk.0.attn_norm.weight')).toMatchObject({ dims: [256], type: 'F32', byteSize: 1024 });
    expect(f.alignment).toBe(32);
    expect(f.dataOffset % 32).toBe(0);
    for (const t of f.tensors) {
      expect(t.offset % 32).toBe(0);
      expect(t.fileOffset).toBe(f.dataOffset + t.offset);
      expect(t.fileOffset + t.byteSize).toBeLessThanOrEqual(bytes.length);
    }
  });

  it('honours general.alignment and reads GGUF v2', async () => {
    const spec: GgufWriteSpec = {
      version: 2,
      alignment: 256,
      metadata: { 'general.architecture': 'llama' },
      tensors: [
        { name: 'a', dims: [3], type: 'F32', data: new Float32Array([1, 2, 3]) },
        { name: 'b', dims: [32, 2], type: 'Q8_0', data: new Float32Array(64) },
      ],
    };
    const f = await parseGguf(encodeGguf(spec));
    expect(f.version).toBe(2);
    expect(f.alignment).toBe(256);
    expect(f.dataOffset % 256).toBe(0);
    expect(f.tensors.map((t) => t.offset)).toEqual([0, 256]);
    expect(entry(f, 'general.alignment')).toMatchObject({ type: 'UINT32', value: 256 });
  });

  it('reads a 4 GiB file without reading its tensor data', async () => {
    const dir = tempDir('gguf-big-');
    const file = path.join(dir, 'big.gguf');
    writeGguf(file, {
      metadata: { 'general.architecture': 'llama' },
      tensors: [{ name: 'huge', dims: [65536, 16384], type: 'F32', data: null }],
    });
    expect(fs.statSync(file).size).toBeGreaterThan(4 * 2 ** 30);
    // Tensor bytes would arrive as ArrayBuffers; the header needs at most one 1 MiB read window.
    const before = process.memoryUsage().arrayBuffers;
    const t0 = performance.now();
    const f = await readGguf(file);
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 2 ** 20);
    expect(f.tensors[0]).toMatchObject({ name: 'huge', nElements: 2 ** 30, byteSize: 2 ** 32 });
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('model info', () => {
  const vocab = sentencePieceVocab({ chatTemplate: '{{ messages }}' });

  it('reads architecture, name, licence, context length, parameters, quantization and template', async () => {
    const { spec } = tinyModel({ arch: 'qwen2', vocab, nEmbd: 256, nLayer: 1, nHead: 4, nHeadKv: 2, nFf: 512, nCtx: 4096, weightType: 'Q4_K', embeddingType: 'Q6_K', fileType: 15 });
    spec.metadata['general.license'] = 'apache-2.0';
    const info = modelInfo(await parseGguf(encodeGguf(spec)));
    const n = vocab.tokens.length;
    const perLayer = 256 + 256 * 256 * 2 + 256 * 128 * 2 + 256 + 128 * 2 + 256 + 256 * 512 * 3;
    expect(info).toEqual({
      architecture: 'qwen2',
      name: 'tiny-qwen2',
      license: 'apache-2.0',
      contextLength: 4096,
      parameterCount: 256 * n * 2 + perLayer + 256,
      quantization: 'Q4_K_M',
      dominantTensorType: 'Q4_K',
      chatTemplate: '{{ messages }}',
    });
  });

  it('counts a tied output matrix once and falls back to the dominant tensor type', async () => {
    const { spec } = tinyModel({ arch: 'llama', vocab, nEmbd: 64, nLayer: 1, nHead: 4, nFf: 512, tiedOutput: true, weightType: 'Q8_0', embeddingType: 'F16' });
    const info = modelInfo(await parseGguf(encodeGguf(spec)));
    expect(info.parameterCount).toBe(64 * vocab.tokens.length + 64 + 4 * 64 * 64 + 64 + 3 * 64 * 512 + 64);
    expect(info.quantization).toBe('Q8_0');
    expect(info.name).toBe('tiny-llama');
    expect(info.license).toBeNull();
  });
});

describe('corrupt files are refused with a GgufError, fast', () => {
  const vocab = sentencePieceVocab();
  const valid = encodeGguf(tinyModel({ arch: 'llama', vocab, nEmbd: 32, nLayer: 1, nHead: 2, nFf: 64, tiedOutput: true }).spec);

  it('the valid file parses', async () => {
    await expect(parseGguf(valid)).resolves.toMatchObject({ version: 3, fileSize: valid.length, alignment: 32 });
  });

  it('every truncation of a valid file', async () => {
    const t0 = performance.now();
    // Every cut in the header and metadata, and a sample of cuts in the tensor data.
    const dataStart = (await parseGguf(valid)).dataOffset;
    for (let cut = 0; cut < valid.length; cut += cut < dataStart + 64 ? 1 : 97) {
      const e = await refusal(valid.subarray(0, cut));
      expect(e.message).toMatch(/truncated|too short|cannot fit|past the end|ends at|bytes left/);
    }
    expect(performance.now() - t0).toBeLessThan(20_000);
  });

  it('random bytes, with and without a valid-looking header', async () => {
    const rnd = seededRandom(99);
    // Random counts would stop every file at the header; small ones let the readers of metadata
    // and tensor infos meet the random bytes.
    const small = (n: number) => Math.floor(rnd.uniform() * n);
    let notGguf = 0;
    let refusedPastHeader = 0;
    let parsed = 0;
    for (let i = 0; i < 300; i++) {
      const n = Math.floor(rnd.uniform() * 400);
      const junk = Uint8Array.from({ length: n }, () => Math.floor(rnd.uniform() * 256));
      const withHeader = i % 2 === 1 && n >= 24;
      if (withHeader) junk.set(header(small(3), small(4)));
      try {
        await parseGguf(junk);
        parsed++;
      } catch (e) {
        expect(e).toBeInstanceOf(GgufError);
        expect((e as Error).message).not.toContain('\n');
        if (withHeader) refusedPastHeader++;
        else {
          expect((e as Error).message).toMatch(/^not a GGUF file/);
          notGguf++;
        }
      }
    }
    // Seed 99: 156 refused at the magic, 131 refused after a valid header, 13 parsed.
    expect(notGguf).toBeGreaterThan(120);
    expect(refusedPastHeader).toBeGreaterThan(90);
    expect(parsed).toBeGreaterThan(5);
  });

  it('random corruption of a valid file', async () => {
    const rnd = seededRandom(5);
    const dataStart = (await parseGguf(valid)).dataOffset;
    let refused = 0;
    let parsed = 0;
    for (let i = 0; i < 300; i++) {
      const bad = valid.slice();
      for (let k = 0; k < 4; k++) bad[Math.floor(rnd.uniform() * dataStart)] = Math.floor(rnd.uniform() * 256);
      try {
        await parseGguf(bad);
        parsed++; // the flips touched only values the reader does not check
      } catch (e) {
        expect(e).toBeInstanceOf(GgufError);
        expect((e as Error).message).not.toContain('\n');
        refused++;
      }
    }
    // Seed 5: 268 refused, 32 parsed.
    expect(refused).toBeGreaterThan(200);
    expect(parsed).toBeGreaterThan(10);
  });

  it('wrong magic, unsupported versions, big-endian files', async () => {
    expect((await refusal(new Uint8Array(0))).message).toMatch(/too short/);
    expect((await refusal(bytesOf('GGML', ['u32', 3], ['u64', 0], ['u64', 0]))).message).toBe(
      'not a GGUF file: the magic is 0x4c4d4747, expected "GGUF"',
    );
    expect((await refusal(header(0, 0, 1))).message).toMatch(/version 1 is not supported/);
    expect((await refusal(header(0, 0, 4))).message).toBe('unsupported GGUF version 4 (supported: 2, 3)');
    expect((await refusal(header(0, 0, 0x03000000))).message).toBe('big-endian GGUF files are not supported');
  });

  it('counts, lengths and element counts far beyond the file size', async () => {
    expect((await refusal(header(2n ** 40n, 0))).message).toBe('the header declares 1099511627776 tensors, more than the limit of 1048576');
    expect((await refusal(header(2n ** 60n, 0))).message).toBe('the tensor count at offset 8 is too large (1152921504606846976)');
    expect((await refusal(header(0, 1000))).message).toMatch(/declares 1000 metadata entries, which cannot fit/);
    expect((await refusal(header(0, 2n ** 64n - 1n))).message).toMatch(/metadata count at offset 16 is too large/);
    const longKey = bytesOf(header(0, 1), ['u64', 2n ** 40n], 'x'.repeat(20));
    expect((await refusal(longKey)).message).toMatch(/key of metadata entry 0 at offset 24 claims 1099511627776 bytes, more than the limit/);
    const hugeArray = bytesOf(header(0, 1), gstr('a'), ['u32', 9], ['u32', 6], ['u64', 2n ** 40n], new Uint8Array(64));
    expect((await refusal(hugeArray)).message).toMatch(/"a" \(offset \d+\) has 1099511627776 elements, more than the limit/);
    const bigStrings = bytesOf(header(0, 1), gstr('a'), ['u32', 9], ['u32', 8], ['u64', 1_000_000], new Uint8Array(64));
    expect((await refusal(bigStrings)).message).toMatch(/declares 1000000 elements, which cannot fit/);
    const longValue = bytesOf(header(0, 1), gstr('a'), ['u32', 8], ['u64', 100], 'short');
    expect((await refusal(longValue)).message).toMatch(/truncated file: "a" at offset \d+ claims 100 bytes, but only 5 are left/);
  });

  it('malformed values and tensor infos', async () => {
    const kv = (key: string, type: number, ...value: Parameters<typeof bytesOf>) => bytesOf(gstr(key), ['u32', type], ...value);
    const withKv = (...kvs: Uint8Array[]) => bytesOf(header(0, kvs.length), ...kvs);
    expect((await refusal(withKv(kv('a', 13, ['u32', 0])))).message).toMatch(/the type of "a" at offset \d+ is 13, not a GGUF value type/);
    expect((await refusal(withKv(kv('b', 7, ['u8', 2])))).message).toMatch(/"b" at offset \d+ is a BOOL with value 2/);
    expect((await refusal(withKv(kv('c', 9, ['u32', 9], ['u64', 1], new Uint8Array(16))))).message).toMatch(/array of arrays/);
    expect((await refusal(withKv(kv('d', 4, ['u32', 1]), kv('d', 4, ['u32', 2])))).message).toBe('duplicate metadata key "d"');
    expect((await refusal(withKv(kv('', 4, ['u32', 1])))).message).toBe('metadata entry 0 has an empty key');
    expect((await refusal(withKv(kv('general.alignment', 4, ['u32', 48])))).message).toBe('general.alignment must be a power of two, not 48');
    expect((await refusal(withKv(kv('general.alignment', 5, ['u32', 64])))).message).toBe('general.alignment must be a UINT32, not INT32');

    const tensor = (name: string, dims: (number | bigint)[], type: number, offset: number | bigint) =>
      bytesOf(gstr(name), ['u32', dims.length], ...dims.map((d) => ['u64', d] as ['u64', bigint | number]), ['u32', type], ['u64', offset]);
    const file = (...infos: Uint8Array[]) => {
      const head = bytesOf(header(infos.length, 0), ...infos);
      return bytesOf(head, new Uint8Array(Math.ceil(head.length / 32) * 32 - head.length + 4096));
    };
    expect((await refusal(file(tensor('t', [4], 99, 0)))).message).toBe('tensor "t" has unknown ggml type 99');
    expect((await refusal(file(tensor('t', [4], 4, 0)))).message).toBe('tensor "t" has unknown ggml type 4');
    expect((await refusal(file(tensor('t', [1, 1, 1, 1, 1], 0, 0)))).message).toBe('tensor "t" has 5 dimensions (1 to 4 allowed)');
    expect((await refusal(file(tensor('t', [], 0, 0)))).message).toBe('tensor "t" has 0 dimensions (1 to 4 allowed)');
    expect((await refusal(file(tensor('t', [33], 8, 0)))).message).toBe('tensor "t" has rows of 33 elements, not a multiple of the Q8_0 block size 32');
    expect((await refusal(file(tensor('t', [4], 0, 8)))).message).toBe('tensor "t" has offset 8, not a multiple of the alignment 32');
    expect((await refusal(file(tensor('t', [2n ** 40n, 2n ** 40n], 0, 0)))).message).toMatch(/too many elements/);
    expect((await refusal(file(tensor('t', [2n ** 30n], 0, 0)))).message).toMatch(/truncated file: tensor "t" needs bytes/);
    expect((await refusal(file(tensor('t', [64], 0, 0), tensor('u', [64], 0, 128)))).message).toBe('tensors "t" and "u" overlap in the data section');
    expect((await refusal(file(tensor('t', [4], 0, 0), tensor('t', [4], 0, 32)))).message).toBe('duplicate tensor name "t"');
    expect((await refusal(file(tensor('x'.repeat(64), [4], 0, 0)))).message).toMatch(/is longer than 63 bytes/);
  });
});

describe.skipIf(!fixturesPresent)('fixture files', () => {
  it('stories260K: dim 64, 5 layers, 8 heads, 4 KV heads, FFN 172, vocab 512, F32, output.weight present', async () => {
    const f = await readGguf(path.join(FIXTURES, 'stories260K.gguf'));
    const m = GgufMetadata.of(f);
    expect(m.string('general.architecture')).toBe('llama');
    expect(m.integer('llama.embedding_length')).toBe(64);
    expect(m.integer('llama.block_count')).toBe(5);
    expect(m.integer('llama.attention.head_count')).toBe(8);
    expect(m.integer('llama.attention.head_count_kv')).toBe(4);
    expect(m.integer('llama.feed_forward_length')).toBe(172);
    expect(m.stringArray('tokenizer.ggml.tokens')).toHaveLength(512);
    expect(f.tensors).toHaveLength(2 + 1 + 5 * 9);
    expect(f.tensors.every((t) => t.type === 'F32')).toBe(true);
    expect(f.tensors.find((t) => t.name === 'output.weight')?.dims).toEqual([64, 512]);
    expect(f.tensors.find((t) => t.name === 'blk.4.attn_k.weight')?.dims).toEqual([64, 32]);
    const last = f.tensors.reduce((a, t) => Math.max(a, t.fileOffset + t.byteSize), 0);
    expect(last).toBeLessThanOrEqual(f.fileSize);
  });

  it('llama-2-tiny-random: the 32,000-token Llama 2 vocabulary and F16 weights', async () => {
    const f = await readGguf(path.join(FIXTURES, 'llama-2-tiny-random.gguf'));
    const info = modelInfo(f);
    expect(info).toMatchObject({ architecture: 'llama', name: 'LLaMA v2', contextLength: 4096, quantization: 'F16' });
    const m = GgufMetadata.of(f);
    expect(m.stringArray('tokenizer.ggml.tokens')).toHaveLength(32000);
    expect(m.optArray<Float32Array>('tokenizer.ggml.scores', ['FLOAT32'])).toHaveLength(32000);
    expect(f.tensors.find((t) => t.name === 'token_embd.weight')).toMatchObject({ dims: [8, 32000], type: 'F16' });
  });
});
