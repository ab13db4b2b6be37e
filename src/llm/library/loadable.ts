// Whether the engine can load a GGUF file, told from its header alone, so that the catalogue marks
// a file it cannot serve (and a deploy of it is refused) before anyone waits for a load to fail:
// its architecture must be one the engine runs, and every tensor of a type it decodes. The engine
// itself refuses the same files at load, naming the same thing (native/llm/model.cc,
// native/llm/encoder.cc, native/ggml/gguf.cc).
import { EMBEDDING_ARCHITECTURES } from '../embed/index.js';
import { ENGINE_TENSOR_TYPES, type GgufFile } from '../gguf/index.js';

/** The decoder architectures the engine runs (native/llm/model.cc). */
export const DECODER_ARCHITECTURES: readonly string[] = ['llama', 'qwen2', 'qwen3', 'qwen3moe', 'gemma2', 'gemma3', 'phi3'];

/** Why the engine cannot load the file, in one sentence, or null when it can. */
export function unsupportedReason(file: GgufFile, architecture: string): string | null {
  const architectures = [...DECODER_ARCHITECTURES, ...EMBEDDING_ARCHITECTURES];
  if (!architectures.includes(architecture)) {
    return `architecture '${architecture}' is not supported (supported: ${architectures.join(', ')})`;
  }
  const counts = new Map<string, number>();
  for (const t of file.tensors) {
    if (!ENGINE_TENSOR_TYPES.includes(t.type)) counts.set(t.type, (counts.get(t.type) ?? 0) + 1);
  }
  if (counts.size === 0) return null;
  const found = [...counts].map(([type, n]) => `${type} (${n} tensor${n === 1 ? '' : 's'})`).join(', ');
  return `tensor type${counts.size === 1 ? '' : 's'} ${found} ${counts.size === 1 ? 'is' : 'are'} not supported (supported: ${ENGINE_TENSOR_TYPES.join(', ')})`;
}
