// What the model library shows about a GGUF file: architecture, name, licence, context length,
// parameter count and quantization, and the chat template. Read from metadata where the converter
// wrote it; the parameter count is always computed from tensor shapes (`general.parameter_count`
// is optional and sometimes stale).

import { fileTypeName } from './ggml-types.js';
import { GgufMetadata } from './metadata.js';
import type { GgufFile, GgufTensorInfo } from './types.js';

export interface GgufModelInfo {
  architecture: string;
  name: string | null;
  license: string | null;
  contextLength: number | null;
  /** Sum of the elements of every tensor (a tied output matrix is counted once). */
  parameterCount: number;
  /** `general.file_type` by name (e.g. "Q4_K_M"), else the dominant tensor type. */
  quantization: string;
  /** The ggml type holding the most weight elements (2-D and larger tensors). */
  dominantTensorType: string | null;
  chatTemplate: string | null;
}

export function architecture(file: GgufFile): string {
  return GgufMetadata.of(file).string('general.architecture');
}

export function modelName(file: GgufFile): string | null {
  return GgufMetadata.of(file).optString('general.name') ?? null;
}

export function license(file: GgufFile): string | null {
  return GgufMetadata.of(file).optString('general.license') ?? null;
}

export function contextLength(file: GgufFile): number | null {
  const meta = GgufMetadata.of(file);
  return meta.optInteger(`${meta.string('general.architecture')}.context_length`) ?? null;
}

export function parameterCount(file: GgufFile): number {
  return file.tensors.reduce((n, t) => n + t.nElements, 0);
}

export function chatTemplate(file: GgufFile): string | null {
  return GgufMetadata.of(file).optString('tokenizer.chat_template') ?? null;
}

/** The type holding the most elements among matrices (norms and biases stay F32 in any file). */
export function dominantTensorType(tensors: readonly GgufTensorInfo[]): string | null {
  const totals = new Map<string, number>();
  const matrices = tensors.filter((t) => t.dims.length >= 2);
  for (const t of matrices.length > 0 ? matrices : tensors) totals.set(t.type, (totals.get(t.type) ?? 0) + t.nElements);
  let best: string | null = null;
  let bestCount = -1;
  for (const [type, count] of totals) {
    if (count > bestCount) {
      best = type;
      bestCount = count;
    }
  }
  return best;
}

export function quantization(file: GgufFile): string {
  const fileType = GgufMetadata.of(file).optInteger('general.file_type');
  const named = fileType === undefined ? undefined : fileTypeName(fileType);
  return named ?? dominantTensorType(file.tensors) ?? 'unknown';
}

export function modelInfo(file: GgufFile): GgufModelInfo {
  return {
    architecture: architecture(file),
    name: modelName(file),
    license: license(file),
    contextLength: contextLength(file),
    parameterCount: parameterCount(file),
    quantization: quantization(file),
    dominantTensorType: dominantTensorType(file.tensors),
    chatTemplate: chatTemplate(file),
  };
}
