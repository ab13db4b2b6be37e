// The embedding encoder's TypeScript interface: load a bert / nomic-bert GGUF, embed batches of
// token-id lists (off the event loop, on a libuv worker), unload. Arguments are checked by the
// addon; a failed load arrives as LlmEngineError('load_failed'), a bad input as the addon's
// RangeError (code 'invalid_argument') naming inputs[i][j].
import { loadAddon } from '../../native/addon.js';
import { nativeErrorCode, withNativeStack } from '../../native/errors.js';
import type { EmbedExports, NativeEmbedLoadOptions, NativeEncoderHandle, NativeEncoderInfo } from '../../native/surface.js';
import { LlmEngineError } from '../engine/errors.js';

export type EmbedderInfo = NativeEncoderInfo;
export type LoadEmbedderOptions = NativeEmbedLoadOptions;

export class Embedder {
  private handle: NativeEncoderHandle | null;
  private inFlight = 0;
  readonly info: EmbedderInfo;

  /** @internal */
  constructor(
    private readonly addon: EmbedExports,
    handle: NativeEncoderHandle,
  ) {
    this.handle = handle;
    this.info = addon.embedModelInfo(handle);
  }

  get dimension(): number {
    return this.info.embeddingLength;
  }

  /** Batches running now (drain waits for 0). */
  get running(): number {
    return this.inFlight;
  }

  /**
   * One unit-length vector per input (pooled as the GGUF's pooling_type says), in input order.
   * All inputs go through the matmuls together; attention stays within each input.
   */
  async embed(inputs: ReadonlyArray<Int32Array | readonly number[]>): Promise<Float32Array[]> {
    if (!this.handle) throw new LlmEngineError('unloaded', 'the embedding model has been unloaded');
    const flat = await this.track(this.addon.embedRun(this.handle, inputs));
    const d = this.dimension;
    return inputs.map((_, i) => flat.subarray(i * d, (i + 1) * d));
  }

  async unload(): Promise<void> {
    const h = this.handle;
    this.handle = null;
    if (h) await this.addon.embedUnload(h);
  }

  private async track<T>(p: Promise<T>): Promise<T> {
    this.inFlight++;
    try {
      return await p;
    } finally {
      this.inFlight--;
    }
  }
}

/** Loads a bert / nomic-bert GGUF for embeddings (parsing and mapping run off the event loop). */
export async function loadEmbedder(path: string, options: LoadEmbedderOptions = {}): Promise<Embedder> {
  const addon = loadAddon();
  let handle: NativeEncoderHandle;
  try {
    handle = await addon.embedLoadModel(path, options);
  } catch (error) {
    const code = nativeErrorCode(error);
    if (code !== 'load_failed' && code !== 'out_of_memory') throw error;
    throw withNativeStack(new LlmEngineError('load_failed', (error as Error).message), error as Error);
  }
  return new Embedder(addon, handle);
}

/** The GGUF architectures the encoder loads. */
export const EMBEDDING_ARCHITECTURES: readonly string[] = ['bert', 'nomic-bert'];

/** Whether `dimensions` below the model's width may be asked for: Matryoshka-trained families only. */
export function allowsShorterDimensions(architecture: string): boolean {
  return architecture === 'nomic-bert';
}

/** The first `dimensions` components of a unit vector, scaled back to unit length. */
export function truncateEmbedding(v: Float32Array, dimensions: number): Float32Array {
  if (dimensions >= v.length) return v;
  const out = v.slice(0, dimensions);
  let sum = 0;
  for (const x of out) sum += x * x;
  const scale = sum > 0 ? 1 / Math.sqrt(sum) : 0;
  for (let i = 0; i < out.length; i++) out[i] = out[i]! * scale;
  return out;
}
