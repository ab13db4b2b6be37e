// Where the reader's bytes come from: a file read piecewise through a file handle (a multi-GB
// model is never loaded, only its header), or bytes already in memory (tests, uploads).

import fs from 'node:fs/promises';

export interface ByteSource {
  readonly size: number;
  /** Exactly `length` bytes at `offset`; callers never ask past `size`. */
  read(offset: number, length: number): Promise<Uint8Array>;
  close(): Promise<void>;
}

export class BufferSource implements ByteSource {
  constructor(private readonly bytes: Uint8Array) {}

  get size(): number {
    return this.bytes.length;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    return this.bytes.subarray(offset, offset + length);
  }

  async close(): Promise<void> {}
}

export class FileSource implements ByteSource {
  private constructor(
    private readonly handle: fs.FileHandle,
    readonly size: number,
  ) {}

  static async open(path: string): Promise<FileSource> {
    const handle = await fs.open(path, 'r');
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw new Error(`${path} is not a regular file`);
      return new FileSource(handle, stat.size);
    } catch (e) {
      await handle.close();
      throw e;
    }
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.handle.read(out, done, length - done, offset + done);
      if (bytesRead === 0) throw new Error(`file shrank while reading at offset ${offset + done}`);
      done += bytesRead;
    }
    return out;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}
