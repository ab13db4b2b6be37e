// The llm* functions of the native addon (native/addon/llm_binding.cc), typed. Only this
// directory talks to them; everything else uses the LlmModel API in model.ts.
import { loadAddon, type SimdLevel } from '../../native/addon.js';

/** Opaque handle of a loaded model. */
export type NativeModelHandle = { readonly __llmModelHandle: unique symbol };

export interface NativeLoadOptions {
  backend?: 'cpu' | 'cuda';
  threads?: number;
  contextLength?: number;
  kvCacheBytes?: number;
  maxRunningSequences?: number;
  maxQueued?: number;
  kvBlockSize?: number;
  maxBatchTokens?: number;
  simd?: SimdLevel;
}

export interface NativeGenerateOptions {
  maxTokens?: number;
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  seed?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
}

export interface NativeTokenEvent {
  id: number;
  type: 'token';
  token: number;
}

export interface NativeFinishEvent {
  id: number;
  type: 'done' | 'logits';
  finishReason: 'stop' | 'length' | 'cancelled' | 'error';
  error?: string;
  promptTokens: number;
  completionTokens: number;
  queuedMs: number;
  prefillMs: number;
  decodeMs: number;
  /** 'logits' events: [positions][vocab]. */
  logits?: Float32Array;
}

export type NativeLlmEvent = NativeTokenEvent | NativeFinishEvent;

export interface NativeModelInfo {
  architecture: 'llama' | 'qwen2';
  ggufVersion: number;
  embeddingLength: number;
  blockCount: number;
  headCount: number;
  headCountKv: number;
  headDim: number;
  feedForwardLength: number;
  vocabSize: number;
  contextLength: number;
  trainContextLength: number;
  ropeFreqBase: number;
  ropeDim: number;
  ropeStyle: 'adjacent' | 'neox';
  rmsEpsilon: number;
  tiedOutput: boolean;
  bosToken: number;
  eosTokens: number[];
  tensorTypes: Record<string, number>;
  memory: { mappedBytes: number; kvCacheBytes: number; scratchBytes: number; deviceWeightBytes: number };
  /** `cpu` or `cuda`. */
  backend: 'cpu' | 'cuda';
  threads: number;
  maxRunningSequences: number;
  maxQueued: number;
  kvBlockSize: number;
  maxBatchTokens: number;
  kernels: string;
}

export interface NativeStats {
  running: number;
  waiting: number;
  kvBlocksUsed: number;
  kvBlocksReserved: number;
  kvBlocksTotal: number;
  kvBlockSize: number;
  steps: number;
  tokensGenerated: number;
}

export interface LlmNativeAddon {
  llmLoadModel(
    path: string,
    options: NativeLoadOptions,
    onEvents: (events: NativeLlmEvent[]) => void,
  ): Promise<NativeModelHandle>;
  llmGenerate(handle: NativeModelHandle, tokens: Int32Array | number[], options?: NativeGenerateOptions): number;
  llmLogits(handle: NativeModelHandle, tokens: Int32Array | number[], allPositions?: boolean): number;
  llmCancel(handle: NativeModelHandle, id: number): void;
  llmStats(handle: NativeModelHandle): NativeStats;
  llmModelInfo(handle: NativeModelHandle): NativeModelInfo;
  llmUnload(handle: NativeModelHandle): Promise<void>;
}

/** The addon's LLM surface; throws AddonLoadError when the addon is missing or too old. */
export function llmAddon(): LlmNativeAddon {
  const addon = loadAddon() as unknown as Partial<LlmNativeAddon>;
  if (typeof addon.llmLoadModel !== 'function') {
    throw new Error('the native addon has no LLM engine (llmLoadModel missing): run "npm run build:native"');
  }
  return addon as LlmNativeAddon;
}
