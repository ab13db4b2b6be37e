// A forward-only little-endian reader over a ByteSource with a refillable window. Reads are
// synchronous against the window; `fill(n)` (the only await) refills it, and refuses to read past
// the end of the file with a GgufError naming what was being read. The parser checks `has(n)`
// first, so a 32k-entry string array costs a handful of awaits, not 32k.

import { GgufError } from './errors.js';
import type { ByteSource } from './source.js';

const CHUNK = 1 << 20;

// ignoreBOM: a string that starts with U+FEFF keeps it (Llama 2's token 30143 is exactly that).
const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

export class Cursor {
  private buf: Uint8Array = new Uint8Array(0);
  private view = new DataView(this.buf.buffer);
  /** File offset of buf[0]. */
  private base = 0;
  /** Index into buf of the next byte. */
  private pos = 0;

  constructor(private readonly source: ByteSource) {}

  get offset(): number {
    return this.base + this.pos;
  }

  get size(): number {
    return this.source.size;
  }

  /** Bytes left in the file after the current offset. */
  get remaining(): number {
    return this.source.size - this.offset;
  }

  /** Bytes left in the window. */
  get available(): number {
    return this.buf.length - this.pos;
  }

  has(n: number): boolean {
    return this.pos + n <= this.buf.length;
  }

  /** Makes at least `n` bytes available at the current offset. */
  async fill(n: number, what: string): Promise<void> {
    if (this.has(n)) return;
    const at = this.offset;
    if (n > this.source.size - at) {
      throw new GgufError(`truncated file: ${what} needs ${n} bytes at offset ${at}, but the file ends at ${this.source.size}`);
    }
    const length = Math.min(Math.max(n, CHUNK), this.source.size - at);
    this.buf = await this.source.read(at, length);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    this.base = at;
    this.pos = 0;
  }

  u8(): number {
    return this.buf[this.pos++]!;
  }

  i8(): number {
    return this.view.getInt8(this.pos++);
  }

  u16(): number {
    const v = this.view.getUint16(this.pos, true);
    this.pos += 2;
    return v;
  }

  i16(): number {
    const v = this.view.getInt16(this.pos, true);
    this.pos += 2;
    return v;
  }

  u32(): number {
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }

  i32(): number {
    const v = this.view.getInt32(this.pos, true);
    this.pos += 4;
    return v;
  }

  f32(): number {
    const v = this.view.getFloat32(this.pos, true);
    this.pos += 4;
    return v;
  }

  f64(): number {
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }

  u64(): bigint {
    const v = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    return v;
  }

  i64(): bigint {
    const v = this.view.getBigInt64(this.pos, true);
    this.pos += 8;
    return v;
  }

  /** A u64 that must fit a JS number exactly (counts, lengths, offsets). */
  u64Number(what: string): number {
    const at = this.offset;
    const v = this.u64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufError(`${what} at offset ${at} is too large (${v})`);
    return Number(v);
  }

  /** `n` bytes as a view into the window (valid until the next fill). */
  bytes(n: number): Uint8Array {
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  utf8(n: number): string {
    return utf8.decode(this.bytes(n));
  }
}
