// readGguf: the header of a GGUF v2/v3 file (magic, version, counts), its metadata and its tensor
// infos, without reading tensor data. Every count, length and offset is checked against what is
// left of the file before anything is allocated for it, so a truncated, corrupt or hostile file
// fails fast with a one-line GgufError instead of hanging or allocating gigabytes.
//
// Layout (gguf.h): "GGUF" u32 version u64 n_tensors u64 n_kv, then n_kv of {string key, u32 type,
// value}, then n_tensors of {string name, u32 n_dims, u64 dims[n_dims], u32 ggml_type, u64 offset},
// then padding to `general.alignment` (default 32), then the tensor data. Strings are u64 length +
// UTF-8 bytes; arrays are u32 element type + u64 count + elements.

import { Cursor } from './cursor.js';
import { GgufError } from './errors.js';
import { ggmlTensorBytes, ggmlTypeTraits } from './ggml-types.js';
import { BufferSource, FileSource, type ByteSource } from './source.js';
import {
  GgufValueType,
  type GgufArray,
  type GgufEntry,
  type GgufFile,
  type GgufTensorInfo,
  type GgufValue,
  type GgufValueTypeName,
} from './types.js';

export interface GgufReadLimits {
  /** Longest string (key, value, tensor name) accepted. Default 16 MiB. */
  maxStringBytes?: number;
  /** Most elements in one metadata array. Default 2^25. */
  maxArrayElements?: number;
  /** Most metadata entries. Default 2^20. */
  maxEntries?: number;
  /** Most tensors. Default 2^20. */
  maxTensors?: number;
}

const DEFAULT_LIMITS: Required<GgufReadLimits> = {
  maxStringBytes: 16 << 20,
  maxArrayElements: 1 << 25,
  maxEntries: 1 << 20,
  maxTensors: 1 << 20,
};

const MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const DEFAULT_ALIGNMENT = 32;
/** ggml's GGML_MAX_DIMS and GGML_MAX_NAME: files beyond them do not load in ggml either. */
const MAX_DIMS = 4;
const MAX_NAME = 64;
/** Smallest possible encodings, used to bound counts by the bytes left in the file. */
const MIN_ENTRY_BYTES = 8 + 1 + 4 + 1; // key length, 1-byte key, type, 1-byte value
const MIN_TENSOR_BYTES = 8 + 1 + 4 + 8 + 4 + 8; // name length, name, n_dims, one dim, type, offset

const TYPE_NAMES = new Map<number, GgufValueTypeName>(
  Object.entries(GgufValueType).map(([name, id]) => [id, name as GgufValueTypeName]),
);

/** Fixed element sizes of the scalar types (strings are variable, arrays cannot nest). */
const SCALAR_SIZE: Partial<Record<GgufValueTypeName, number>> = {
  UINT8: 1,
  INT8: 1,
  UINT16: 2,
  INT16: 2,
  UINT32: 4,
  INT32: 4,
  FLOAT32: 4,
  BOOL: 1,
  UINT64: 8,
  INT64: 8,
  FLOAT64: 8,
};

/** Reads the metadata and tensor infos of the GGUF file at `path` (tensor data is not read). */
export async function readGguf(path: string, limits: GgufReadLimits = {}): Promise<GgufFile> {
  let source: FileSource;
  try {
    source = await FileSource.open(path);
  } catch (e) {
    throw new GgufError(`cannot open ${path}: ${(e as Error).message}`);
  }
  try {
    return await parseSource(source, limits);
  } finally {
    await source.close();
  }
}

/** The same for a GGUF file already in memory. */
export function parseGguf(bytes: Uint8Array, limits: GgufReadLimits = {}): Promise<GgufFile> {
  return parseSource(new BufferSource(bytes), limits);
}

async function parseSource(source: ByteSource, userLimits: GgufReadLimits): Promise<GgufFile> {
  const limits = { ...DEFAULT_LIMITS, ...userLimits };
  const c = new Cursor(source);
  const p = new Parser(c, limits);

  if (source.size < 4) throw new GgufError(`not a GGUF file: ${source.size} bytes is too short for the header`);
  await c.fill(4, 'the magic');
  const magic = c.u32();
  if (magic !== MAGIC) {
    throw new GgufError(`not a GGUF file: the magic is 0x${magic.toString(16).padStart(8, '0')}, expected "GGUF"`);
  }
  await c.fill(4 + 8 + 8, 'the header');
  const version = c.u32();
  if (version === 1) throw new GgufError('GGUF version 1 is not supported (its counts are 32-bit); convert the file again');
  if (version !== 2 && version !== 3) {
    const swapped = ((version & 0xff) << 24) | ((version & 0xff00) << 8) | ((version >>> 8) & 0xff00) | (version >>> 24);
    if (swapped === 2 || swapped === 3) throw new GgufError('big-endian GGUF files are not supported');
    throw new GgufError(`unsupported GGUF version ${version} (supported: 2, 3)`);
  }
  const nTensors = c.u64Number('the tensor count');
  const nEntries = c.u64Number('the metadata count');
  checkCount(nEntries, limits.maxEntries, MIN_ENTRY_BYTES, c.remaining, 'metadata entries');
  checkCount(nTensors, limits.maxTensors, MIN_TENSOR_BYTES, c.remaining, 'tensors');

  const entries: GgufEntry[] = [];
  const seenKeys = new Set<string>();
  for (let i = 0; i < nEntries; i++) {
    const entry = await p.entry(i);
    if (seenKeys.has(entry.key)) throw new GgufError(`duplicate metadata key "${entry.key}"`);
    seenKeys.add(entry.key);
    entries.push(entry);
  }

  const alignment = alignmentOf(entries);

  const tensors: GgufTensorInfo[] = [];
  const seenNames = new Set<string>();
  for (let i = 0; i < nTensors; i++) {
    const t = await p.tensorInfo(i, alignment);
    if (seenNames.has(t.name)) throw new GgufError(`duplicate tensor name "${t.name}"`);
    seenNames.add(t.name);
    tensors.push(t);
  }

  const dataOffset = alignUp(c.offset, alignment);
  if (dataOffset > source.size && tensors.length > 0) {
    throw new GgufError(`truncated file: the tensor data would start at offset ${dataOffset}, past the end (${source.size})`);
  }
  placeTensors(tensors, dataOffset, source.size);

  return { version, fileSize: source.size, alignment, dataOffset, entries, tensors };
}

function checkCount(n: number, limit: number, minBytes: number, remaining: number, what: string): void {
  if (n > limit) throw new GgufError(`the header declares ${n} ${what}, more than the limit of ${limit}`);
  if (n * minBytes > remaining) {
    throw new GgufError(`the header declares ${n} ${what}, which cannot fit in the ${remaining} bytes left in the file`);
  }
}

function alignmentOf(entries: GgufEntry[]): number {
  const e = entries.find((x) => x.key === 'general.alignment');
  if (!e) return DEFAULT_ALIGNMENT;
  if (e.type !== 'UINT32') throw new GgufError(`general.alignment must be a UINT32, not ${e.type}`);
  const a = e.value as number;
  if (a === 0 || (a & (a - 1)) !== 0) throw new GgufError(`general.alignment must be a power of two, not ${a}`);
  return a;
}

const alignUp = (x: number, a: number) => Math.ceil(x / a) * a;

/** Absolute offsets, and every tensor inside the file and apart from every other. */
function placeTensors(tensors: GgufTensorInfo[], dataOffset: number, fileSize: number): void {
  for (const t of tensors) {
    t.fileOffset = dataOffset + t.offset;
    if (t.fileOffset + t.byteSize > fileSize) {
      throw new GgufError(
        `truncated file: tensor "${t.name}" needs bytes ${t.fileOffset}..${t.fileOffset + t.byteSize}, but the file ends at ${fileSize}`,
      );
    }
  }
  const byOffset = [...tensors].sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < byOffset.length; i++) {
    const prev = byOffset[i - 1]!;
    const cur = byOffset[i]!;
    if (prev.offset + prev.byteSize > cur.offset) {
      throw new GgufError(`tensors "${prev.name}" and "${cur.name}" overlap in the data section`);
    }
  }
}

class Parser {
  constructor(
    private readonly c: Cursor,
    private readonly limits: Required<GgufReadLimits>,
  ) {}

  async entry(index: number): Promise<GgufEntry> {
    const key = await this.string(`the key of metadata entry ${index}`);
    if (key.length === 0) throw new GgufError(`metadata entry ${index} has an empty key`);
    const type = await this.valueType(`the type of "${key}"`);
    if (type !== 'ARRAY') return { key, type, value: await this.scalar(type, `"${key}"`) };

    const c = this.c;
    const at = c.offset;
    await c.fill(4 + 8, `the array header of "${key}"`);
    const elementType = await this.valueType(`the element type of "${key}"`);
    if (elementType === 'ARRAY') throw new GgufError(`"${key}" is an array of arrays, which GGUF readers do not support`);
    const count = c.u64Number(`the element count of "${key}"`);
    const minSize = SCALAR_SIZE[elementType] ?? 8; // a string is at least its u64 length
    if (count > this.limits.maxArrayElements) {
      throw new GgufError(`"${key}" (offset ${at}) has ${count} elements, more than the limit of ${this.limits.maxArrayElements}`);
    }
    if (count * minSize > c.remaining) {
      throw new GgufError(`truncated file: "${key}" (offset ${at}) declares ${count} elements, which cannot fit in the ${c.remaining} bytes left`);
    }
    return { key, type, elementType, value: await this.array(elementType, count, `"${key}"`) };
  }

  async tensorInfo(index: number, alignment: number): Promise<GgufTensorInfo> {
    const c = this.c;
    const at = c.offset;
    const name = await this.string(`the name of tensor ${index}`);
    if (name.length === 0) throw new GgufError(`tensor ${index} (offset ${at}) has an empty name`);
    if (Buffer.byteLength(name) >= MAX_NAME) throw new GgufError(`tensor name "${name.slice(0, 80)}" is longer than ${MAX_NAME - 1} bytes`);
    await c.fill(4, `the dimension count of "${name}"`);
    const nDims = c.u32();
    if (nDims === 0 || nDims > MAX_DIMS) throw new GgufError(`tensor "${name}" has ${nDims} dimensions (1 to ${MAX_DIMS} allowed)`);
    await c.fill(8 * nDims + 4 + 8, `the shape of "${name}"`);
    const dims: number[] = [];
    let nElements = 1;
    for (let d = 0; d < nDims; d++) {
      const dim = c.u64Number(`dimension ${d} of "${name}"`);
      dims.push(dim);
      nElements *= dim;
    }
    if (!Number.isSafeInteger(nElements)) throw new GgufError(`tensor "${name}" has too many elements (${dims.join(' x ')})`);
    const typeId = c.u32();
    const traits = ggmlTypeTraits(typeId);
    if (!traits) throw new GgufError(`tensor "${name}" has unknown ggml type ${typeId}`);
    if (dims[0]! % traits.blockSize !== 0) {
      throw new GgufError(`tensor "${name}" has rows of ${dims[0]} elements, not a multiple of the ${traits.name} block size ${traits.blockSize}`);
    }
    const offset = c.u64Number(`the data offset of "${name}"`);
    if (offset % alignment !== 0) throw new GgufError(`tensor "${name}" has offset ${offset}, not a multiple of the alignment ${alignment}`);
    return {
      name,
      dims,
      type: traits.name,
      typeId,
      offset,
      fileOffset: 0,
      nElements,
      byteSize: ggmlTensorBytes(traits, nElements),
    };
  }

  private async valueType(what: string): Promise<GgufValueTypeName> {
    const c = this.c;
    const at = c.offset;
    await c.fill(4, what);
    const id = c.u32();
    const name = TYPE_NAMES.get(id);
    if (!name) throw new GgufError(`${what} at offset ${at} is ${id}, not a GGUF value type`);
    return name;
  }

  private async string(what: string): Promise<string> {
    const c = this.c;
    await c.fill(8, what);
    const at = c.offset;
    const n = c.u64Number(`the length of ${what}`);
    this.checkStringLength(n, at, what);
    await c.fill(n, what);
    return c.utf8(n);
  }

  private checkStringLength(n: number, at: number, what: string): void {
    if (n > this.limits.maxStringBytes) {
      throw new GgufError(`${what} at offset ${at} claims ${n} bytes, more than the limit of ${this.limits.maxStringBytes}`);
    }
    if (n > this.c.remaining) {
      throw new GgufError(`truncated file: ${what} at offset ${at} claims ${n} bytes, but only ${this.c.remaining} are left`);
    }
  }

  private async scalar(type: Exclude<GgufValueTypeName, 'ARRAY'>, what: string): Promise<GgufValue> {
    if (type === 'STRING') return this.string(what);
    const c = this.c;
    await c.fill(SCALAR_SIZE[type]!, what);
    return this.readScalar(type, what);
  }

  /** A fixed-size scalar already in the window. */
  private readScalar(type: Exclude<GgufValueTypeName, 'ARRAY' | 'STRING'>, what: string): number | bigint | boolean {
    const c = this.c;
    switch (type) {
      case 'UINT8':
        return c.u8();
      case 'INT8':
        return c.i8();
      case 'UINT16':
        return c.u16();
      case 'INT16':
        return c.i16();
      case 'UINT32':
        return c.u32();
      case 'INT32':
        return c.i32();
      case 'FLOAT32':
        return c.f32();
      case 'FLOAT64':
        return c.f64();
      case 'UINT64':
        return c.u64();
      case 'INT64':
        return c.i64();
      case 'BOOL': {
        const at = c.offset;
        const b = c.u8();
        if (b > 1) throw new GgufError(`${what} at offset ${at} is a BOOL with value ${b} (must be 0 or 1)`);
        return b === 1;
      }
    }
  }

  private async array(type: Exclude<GgufValueTypeName, 'ARRAY'>, count: number, what: string): Promise<GgufArray> {
    const c = this.c;
    if (type === 'STRING') {
      const out: string[] = new Array<string>(count);
      for (let i = 0; i < count; i++) {
        if (!c.has(8)) await c.fill(8, `element ${i} of ${what}`);
        const at = c.offset;
        const n = c.u64Number(`the length of element ${i} of ${what}`);
        this.checkStringLength(n, at, `element ${i} of ${what}`);
        if (!c.has(n)) await c.fill(n, `element ${i} of ${what}`);
        out[i] = c.utf8(n);
      }
      return out;
    }
    if (type === 'BOOL') {
      const out: boolean[] = new Array<boolean>(count);
      for (let i = 0; i < count; i++) {
        if (!c.has(1)) await c.fill(1, `element ${i} of ${what}`);
        out[i] = this.readScalar('BOOL', `element ${i} of ${what}`) as boolean;
      }
      return out;
    }
    // Fixed-size numbers: copy the bytes in (window-sized pieces) and view them as a typed array.
    const size = SCALAR_SIZE[type]!;
    const raw = new Uint8Array(count * size);
    let done = 0;
    while (done < raw.length) {
      if (!c.has(1)) await c.fill(Math.min(raw.length - done, 1 << 20), what);
      const n = Math.min(raw.length - done, c.available);
      raw.set(c.bytes(n), done);
      done += n;
    }
    return typedView(type, raw.buffer, count);
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function typedView(type: Exclude<GgufValueTypeName, 'ARRAY' | 'STRING' | 'BOOL'>, buffer: ArrayBuffer, count: number): GgufArray {
  if (!LITTLE_ENDIAN) throw new GgufError('reading GGUF numeric arrays needs a little-endian host');
  switch (type) {
    case 'UINT8':
      return new Uint8Array(buffer, 0, count);
    case 'INT8':
      return new Int8Array(buffer, 0, count);
    case 'UINT16':
      return new Uint16Array(buffer, 0, count);
    case 'INT16':
      return new Int16Array(buffer, 0, count);
    case 'UINT32':
      return new Uint32Array(buffer, 0, count);
    case 'INT32':
      return new Int32Array(buffer, 0, count);
    case 'FLOAT32':
      return new Float32Array(buffer, 0, count);
    case 'FLOAT64':
      return new Float64Array(buffer, 0, count);
    case 'UINT64':
      return new BigUint64Array(buffer, 0, count);
    case 'INT64':
      return new BigInt64Array(buffer, 0, count);
  }
}
