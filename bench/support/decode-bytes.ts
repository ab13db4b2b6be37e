// Bytes of weights one batch-1 decode step reads from a GGUF file: every tensor once, except the
// token embedding, of which one row (the token's) is read, unless the output layer is tied to it
// (no output.weight), when the whole matrix is the output projection too. The KV cache is not
// counted (at the bench's 16-48 positions it is about 0.1 % of the weights).
import { readGguf } from '../../src/llm/gguf/index.js';

export interface DecodeBytes {
  /** Bytes read per decode token (weights only). */
  perToken: number;
  /** Bytes of each tensor type among them, e.g. { Q4_K: ..., Q6_K: ..., F32: ... }. */
  byType: Record<string, number>;
}

export async function decodeBytesPerToken(file: string): Promise<DecodeBytes> {
  const gguf = await readGguf(file);
  const tied = !gguf.tensors.some((t) => t.name === 'output.weight');
  const byType: Record<string, number> = {};
  let perToken = 0;
  for (const t of gguf.tensors) {
    const rows = t.dims.slice(1).reduce((a, b) => a * b, 1);
    const bytes = t.name === 'token_embd.weight' && !tied ? t.byteSize / rows : t.byteSize;
    perToken += bytes;
    byType[t.type] = (byType[t.type] ?? 0) + bytes;
  }
  return { perToken, byType };
}
