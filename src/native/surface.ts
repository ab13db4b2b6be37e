// Everything platform.node exports, typed in one place: the whole boundary between the host and
// the native engine (native/addon/*.cc). Only src/native/addon.ts loads the addon; the engine
// wrappers (src/native/gemm.ts, src/llm/engine/, src/tabular/executor/) call it through these
// types, so a change to a binding is a change to this file and nowhere else.
//
// It imports nothing of the host, so that every layer above can use it.
//
// Contract of every export (native/addon/errors.h):
// - arguments are validated natively; defaults and ranges live there and nowhere else;
// - every error is an Error, TypeError (wrong type) or RangeError (right type, unusable value)
//   carrying a `code` (NativeErrorCode); an asynchronous failure rejects with an error whose stack
//   is the caller's, captured when the call was made (except TabularModel.run(), the per-batch
//   hot path of predict: recording a stack would cost 15 % of a one-row run).

/** Where a model runs: the CPU, or CUDA device 0 (needs `npm run build:cuda` and a GPU). */
export type InstanceType = 'cpu' | 'cuda';
export const INSTANCE_TYPES: readonly InstanceType[] = ['cpu', 'cuda'];
export const isInstanceType = (value: unknown): value is InstanceType => INSTANCE_TYPES.includes(value as InstanceType);

export type SimdLevel = 'scalar' | 'neon' | 'avx2' | 'avx512';

/** The `code` of every error the addon raises. */
export type NativeErrorCode =
  | 'invalid_argument' // TypeError or RangeError: a bad argument
  | 'out_of_memory'
  | 'unavailable' // the asked-for device cannot be used here (no CUDA build, no device)
  | 'load_failed' // llmLoadModel: the GGUF file could not be loaded
  | 'overloaded' // llmGenerate: the wait queue is full
  | 'context_length' // the prompt does not fit the context
  | 'kv_cache' // the prompt does not fit the KV cache budget at all
  | 'unloaded' // the model was unloaded
  | 'model_refused' // tabularCompile: the executor cannot run this model
  | 'run_failed' // a tabular run failed (the message names the node)
  | 'disposed' // the tabular model was disposed
  | 'internal';

// ---------------------------------------------------------------------------------------------
// engineInfo

export interface CudaDeviceInfo {
  name: string;
  /** Bytes of device memory. */
  totalMemory: number;
  /** "major.minor", e.g. "9.0". */
  computeCapability: string;
}

export interface EngineInfo {
  version: string;
  simd: {
    /** Best level this CPU and OS support. */
    detected: SimdLevel;
    /** Level used when a call does not say: detected, lowered by env PLATFORM_SIMD. */
    active: SimdLevel;
    /** Every supported level, ascending. */
    available: SimdLevel[];
    /** Present when PLATFORM_SIMD holds an unknown value (which is then ignored). */
    warning?: string;
  };
  /** Default thread count: env PLATFORM_THREADS or the number of hardware threads. */
  threads: number;
  cuda: {
    /** Whether this addon was built with the CUDA backend (npm run build:cuda). */
    built: boolean;
    devices: CudaDeviceInfo[];
    /** Why devices could not be listed (no driver, no device), or null. */
    error: string | null;
  };
}

// ---------------------------------------------------------------------------------------------
// f32 GEMM / GEMV (native/addon/gemm_binding.cc). Matrices are row-major Float32Arrays with
// leading dimensions (BLAS style); outputs are written in place and also returned.

/** Per-call engine options accepted by every kernel entry point. */
export interface NativeCallOptions {
  /** Run at this SIMD level, or the best supported one below it. Default: engineInfo().simd.active. */
  simd?: SimdLevel;
  /** Threads for this call; 0 or absent means engineInfo().threads. At most 256. */
  threads?: number;
}

type GemmArgs = [
  transA: boolean,
  transB: boolean,
  m: number,
  n: number,
  k: number,
  alpha: number,
  a: Float32Array,
  lda: number,
  b: Float32Array,
  ldb: number,
  beta: number,
  c: Float32Array,
  ldc: number,
  options?: NativeCallOptions,
];

type GemvArgs = [
  transA: boolean,
  m: number,
  n: number,
  alpha: number,
  a: Float32Array,
  lda: number,
  x: Float32Array,
  beta: number,
  y: Float32Array,
  options?: NativeCallOptions,
];

export interface CoreExports {
  engineInfo(): EngineInfo;
  /** C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C (beta 0: C is not read). */
  gemmF32(...args: GemmArgs): Float32Array;
  /** gemmF32 on a libuv worker thread; resolves with c. */
  gemmF32Async(...args: GemmArgs): Promise<Float32Array>;
  /** y = alpha * op(A) x + beta * y, A stored [m,n] (beta 0: y is not read). */
  gemvF32(...args: GemvArgs): Float32Array;
  /** gemvF32 on a libuv worker thread; resolves with y. */
  gemvF32Async(...args: GemvArgs): Promise<Float32Array>;
}

// ---------------------------------------------------------------------------------------------
// The LLM engine (native/addon/llm_binding.cc): a loaded model is an opaque handle; its
// scheduler thread delivers events (tokens, finishes, logits) to one callback per model.

/** Opaque handle of a loaded model. */
export type NativeModelHandle = { readonly __llmModelHandle: unique symbol };

/** llmLoadModel options; absent fields take the engine's defaults (llmOptionLimits.load). */
export interface NativeLoadOptions {
  /** Where the forward pass runs: `cpu` (default) or `cuda` (device 0; needs `npm run build:cuda`). */
  backend?: InstanceType;
  /** Threads for the forward pass (default: env PLATFORM_THREADS or all cores). */
  threads?: number;
  /** Context length in tokens (default: the model's training context, `{arch}.context_length`). */
  contextLength?: number;
  /**
   * KV cache budget in bytes (default: maxRunningSequences full contexts within 1 GiB, but never
   * less than one full context, up to 4 GiB).
   */
  kvCacheBytes?: number;
  /** Sequences decoded together in one batch (default 8). */
  maxRunningSequences?: number;
  /** Requests that may wait for admission; beyond that generate() throws OverloadedError (default 64). */
  maxQueued?: number;
  /** Positions per KV cache block (default 16). */
  kvBlockSize?: number;
  /** Tokens per forward step: one per decoding sequence plus prompt chunks (default 256). */
  maxBatchTokens?: number;
  /** Kernels at or below this SIMD level (tests compare levels). */
  simd?: SimdLevel;
  /** Reuse the KV cache of prompt prefixes seen before (default: on unless PLATFORM_PREFIX_CACHE=0). */
  prefixCache?: boolean;
  /**
   * Speculative decoding by prompt lookup: each decoding step also verifies up to this many tokens
   * drafted from the sequence's own context (0, the default: off). The output is unchanged.
   */
  speculativeTokens?: number;
  /**
   * Draft only as many tokens as the engine's measured step costs repay, given how often the
   * request's drafts were right (default: true unless PLATFORM_SPECULATIVE_ADAPTIVE=0); false
   * drafts every proposal at full length.
   */
  speculativeAdaptive?: boolean;
  /**
   * A GGUF file of the same vocabulary whose greedy decoding drafts the speculativeTokens tokens
   * (on the model's kind of backend, with a KV cache of its own), instead of prompt lookup.
   */
  draftModel?: string;
}

/** llmGenerate options; absent fields take the engine's defaults (llmOptionLimits.generate). */
export interface NativeGenerateOptions {
  /** Tokens to generate at most (default 16, as vLLM's and OpenAI's completions); fewer when the context fills up. */
  maxTokens?: number;
  /** 0 (default) is greedy decoding. */
  temperature?: number;
  /** Keep the k most likely tokens (0 = off). */
  topK?: number;
  /** Nucleus sampling: keep the smallest set with this much probability (1 = off). */
  topP?: number;
  /** Drop tokens less likely than minP times the most likely one (0 = off). */
  minP?: number;
  /** Seed for reproducible sampling (default: random). */
  seed?: number;
  /** Subtracted from a token's logit per time it was generated, in [-2, 2]. */
  frequencyPenalty?: number;
  /** Subtracted from a token's logit once it was generated, in [-2, 2]. */
  presencePenalty?: number;
  /** Each token with its log-probability and this many most likely alternatives (default -1: none). */
  logprobs?: number;
  /** Prefix caching: only generations with the same salt share cached prompt blocks. */
  cacheSalt?: string;
  /** The output must match this grammar (llmCompileGrammar): only tokens it allows are sampled. */
  grammar?: NativeGrammarHandle;
  /** With grammar: the grammar applies only after the output contains this text (tool calls in "auto" mode). */
  grammarTrigger?: string;
}

/** Opaque handle of a grammar compiled against one model's vocabulary. */
export type NativeGrammarHandle = { readonly __llmGrammarHandle: unique symbol };

/** One numeric option of the engine: its default and its inclusive range. */
export interface NativeOptionLimit {
  /** contextLength and kvCacheBytes: 0 means chosen by the engine (see LoadModelOptions). */
  default: number;
  min: number;
  max: number;
  integer: boolean;
}

/** The engine's own table of defaults and ranges, the one the bindings read options with. */
export interface NativeOptionLimits {
  load: Record<Exclude<keyof NativeLoadOptions, 'backend' | 'simd'>, NativeOptionLimit>;
  generate: Record<keyof NativeGenerateOptions, NativeOptionLimit>;
}

export interface NativeTokenEvent {
  id: number;
  type: 'token';
  token: number;
  /** With the logprobs option: the token's log-probability and the top alternatives as [token, log-probability]. */
  logprob?: number;
  top?: Array<[number, number]>;
}

export interface NativeFinishEvent {
  id: number;
  type: 'done' | 'logits' | 'embedding';
  finishReason: 'stop' | 'length' | 'cancelled' | 'error';
  error?: string;
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens whose KV came from the prefix cache. */
  cachedTokens: number;
  queuedMs: number;
  prefillMs: number;
  decodeMs: number;
  /** 'logits' events: [positions][vocab]. */
  logits?: Float32Array;
  /** 'embedding' events: [embeddingLength], unit length. */
  embedding?: Float32Array;
}

export type NativeLlmEvent = NativeTokenEvent | NativeFinishEvent;

export interface NativeModelInfo {
  architecture: 'llama' | 'qwen2' | 'qwen3' | 'qwen3moe' | 'gemma2' | 'gemma3' | 'phi3';
  ggufVersion: number;
  embeddingLength: number;
  blockCount: number;
  headCount: number;
  headCountKv: number;
  headDim: number;
  feedForwardLength: number;
  /** Mixture of experts: experts per layer, experts each token uses, each expert's FFN width (0, 0, 0: dense). */
  expertCount: number;
  expertUsedCount: number;
  expertFeedForwardLength: number;
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
  backend: InstanceType;
  threads: number;
  maxRunningSequences: number;
  maxQueued: number;
  kvBlockSize: number;
  maxBatchTokens: number;
  speculativeTokens: number;
  /** The draft model's path, or null. */
  draftModel: string | null;
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
  /** Blocks holding cached prefixes that no sequence holds now (evicted when blocks run out). */
  kvBlocksCached: number;
  /** Prompt tokens looked up in the prefix cache, and found there, since the model loaded. */
  prefixCacheQueries: number;
  prefixCacheHits: number;
  /** Speculative decoding: draft tokens verified, and accepted, since the model loaded. */
  draftTokens: number;
  acceptedTokens: number;
}

export interface LlmExports {
  /** Parses and maps the file off the JavaScript thread; rejects with code 'load_failed'. */
  llmLoadModel(path: string, options: NativeLoadOptions, onEvents: (events: NativeLlmEvent[]) => void): Promise<NativeModelHandle>;
  /** Queues a generation; returns its id. Throws 'overloaded', 'context_length', 'kv_cache', 'unloaded'. */
  llmGenerate(handle: NativeModelHandle, tokens: Int32Array | number[], options?: NativeGenerateOptions): number;
  /** Queues a logits request; the result arrives as a 'logits' event. */
  llmLogits(handle: NativeModelHandle, tokens: Int32Array | number[], allPositions?: boolean): number;
  /** Queues an embedding request (the last position's hidden state after the output norm, normalized); the result arrives as an 'embedding' event. */
  llmEmbed(handle: NativeModelHandle, tokens: Int32Array | number[]): number;
  llmCancel(handle: NativeModelHandle, id: number): void;
  llmStats(handle: NativeModelHandle): NativeStats;
  llmModelInfo(handle: NativeModelHandle): NativeModelInfo;
  /** Cancels every sequence, joins the scheduler thread, unmaps the file. */
  llmUnload(handle: NativeModelHandle): Promise<void>;
  /** The vocabulary as bytes (token t is bytes[offsets[t], offsets[t + 1])), once per model before grammars. */
  llmSetTokenBytes(handle: NativeModelHandle, bytes: Uint8Array, offsets: Uint32Array): void;
  /** Compiles an encoded byte grammar (src/llm/structured/grammar.ts) for this model; RangeError when it is unusable. */
  llmCompileGrammar(handle: NativeModelHandle, encoded: Int32Array): NativeGrammarHandle;
  /** The parser states a grammar has met so far (its cache). */
  llmGrammarStates(grammar: NativeGrammarHandle): number;
  /** The defaults and ranges of every numeric option: the engine's own, frozen. */
  readonly llmOptionLimits: NativeOptionLimits;
}

// ---------------------------------------------------------------------------------------------
// The tabular (ONNX) executor (native/addon/tabular_binding.cc).

/**
 * Input data by the input's declared element type:
 * float -> Float32Array; double -> Float64Array; int64 -> BigInt64Array; uint64 -> BigUint64Array;
 * uint32 -> Uint32Array; int8, uint8, int16, uint16, int32, bool -> Int32Array (range-checked);
 * string -> string[]. Row-major; the data is copied before the call returns.
 */
export type TabularInputData = Float32Array | Float64Array | BigInt64Array | BigUint64Array | Int32Array | Uint32Array | string[];

export interface TabularInput {
  /** A graph input name. */
  name: string;
  /** The shape; its product must equal data.length. The first dimension is the batch (any size). */
  dims: number[];
  data: TabularInputData;
}

/** Element types the executor produces (float16 / bfloat16 values are computed as float). */
export type TabularElementType =
  | 'float'
  | 'double'
  | 'int8'
  | 'uint8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'uint32'
  | 'int64'
  | 'uint64'
  | 'bool'
  | 'string';

/** Output data, with the same conventions as TabularInputData (and as src/tabular/onnx tensors). */
export type TabularOutputData = TabularInputData;

export interface TabularOutput {
  /** The graph output's name; outputs come in graph-output order. */
  name: string;
  dataType: TabularElementType;
  dims: number[];
  data: TabularOutputData;
  /**
   * Only on a ZipMap output (seq(map(int64|string, float))): the class labels, one per column of
   * `data`, which is then the [N, C] float probability tensor. The host builds the N maps.
   */
  mapKeys?: BigInt64Array | string[];
}

export type TabularValueInfo =
  | { name: string; kind: 'tensor'; dataType: TabularElementType; shape: (number | null)[] | null }
  | { name: string; kind: 'sequence-map'; keyType: 'int64' | 'string'; valueType: TabularElementType }
  | { name: string; kind: 'unknown' };

export interface TabularModelInfo {
  disposed: boolean;
  /** Absent once disposed. */
  inputs?: TabularValueInfo[];
  outputs?: TabularValueInfo[];
  /** Number of nodes. */
  nodes?: number;
  /** Qualified operators in first-use order, e.g. "Gemm", "ai.onnx.ml.TreeEnsembleClassifier". */
  operators?: string[];
  /** Bytes of initializer data held by the compiled model. */
  initializerBytes?: number;
  /** Threads each run may use. */
  threads?: number;
  /** Where float Gemm / MatMul products run ('cuda': from cudaMinRows rows on). */
  device?: InstanceType;
  /** CUDA only: the device's name. */
  deviceName?: string;
  /** CUDA only: the crossover batch size. */
  cudaMinRows?: number;
  /** CUDA only: Gemm / MatMul layers that run as device chains (weights resident on the device). */
  deviceLayers?: number;
  /** CUDA only: bytes of weights and biases kept on the device. */
  deviceBytes?: number;
}

export interface TabularCompileOptions {
  /** Threads per run; 0 or absent: the engine default (PLATFORM_THREADS or all cores). At most 256. */
  threads?: number;
  /**
   * 'cuda': products of at least `cudaMinRows` rows run on CUDA device 0. Compiling fails with
   * code 'unavailable' when the addon has no CUDA backend or no usable device. Default 'cpu'.
   */
  device?: InstanceType;
  /**
   * CUDA only: the batch rows from which products run on the device (smaller batches are faster
   * on the CPU). 0: always on the device. Default: env PLATFORM_TABULAR_CUDA_MIN_ROWS, else the
   * engine's measured crossover.
   */
  cudaMinRows?: number;
}

/** A compiled model (class TabularModel in tabular_binding.cc). */
export interface TabularModel {
  /** Copies the inputs, runs on a libuv worker; rejects (never throws) on bad inputs or errors. */
  run(inputs: readonly TabularInput[]): Promise<TabularOutput[]>;
  /** Runs on the calling thread (tests, benchmarks, tools); throws. */
  runSync(inputs: readonly TabularInput[]): TabularOutput[];
  describe(): TabularModelInfo;
  /** Frees the compiled graph (runs in flight finish first); later calls fail. Idempotent. */
  dispose(): void;
  readonly disposed: boolean;
}

export interface TabularExports {
  /**
   * Compiles a NormalizedModel (src/tabular/onnx; typed there, by compileTabularModel: this file
   * imports nothing of the host). The binding reads and checks every field itself: a TypeError
   * naming the path for a malformed object, Error 'model_refused' for a model it cannot run.
   */
  tabularCompile(model: object, options?: TabularCompileOptions): TabularModel;
}

// ---------------------------------------------------------------------------------------------
// The embedding encoder (native/addon/embed_binding.cc): BERT-family GGUF models (bert,
// nomic-bert); a batch of token-id lists in, one pooled, L2-normalized vector per list out.

/** Opaque handle of a loaded encoder. */
export type NativeEncoderHandle = { readonly __embedEncoderHandle: unique symbol };

export interface NativeEmbedLoadOptions {
  /** 0 or absent: the process default (PLATFORM_THREADS or every core). */
  threads?: number;
  simd?: SimdLevel;
}

export interface NativeEncoderInfo {
  architecture: 'bert' | 'nomic-bert';
  ggufVersion: number;
  embeddingLength: number;
  blockCount: number;
  headCount: number;
  feedForwardLength: number;
  vocabSize: number;
  /** The longest input, in tokens. */
  contextLength: number;
  layerNormEpsilon: number;
  /** `<arch>.pooling_type`: 1 mean, 2 cls, 3 last (absent: mean). */
  pooling: 'mean' | 'cls' | 'last';
  ropeFreqBase?: number;
  tensorTypes: Record<string, number>;
  mappedBytes: number;
  threads: number;
  kernels: string;
  backend: 'cpu';
}

export interface EmbedExports {
  /** Maps and validates a bert / nomic-bert GGUF (rejects with code 'load_failed' naming the key or tensor). */
  embedLoadModel(path: string, options?: NativeEmbedLoadOptions): Promise<NativeEncoderHandle>;
  /**
   * Embeds each token-id list (RangeError, code 'invalid_argument', naming inputs[i][j] for an empty
   * list, one longer than contextLength, or an id outside the vocabulary): resolves with
   * inputs.length x embeddingLength floats, input after input.
   */
  embedRun(handle: NativeEncoderHandle, inputs: ReadonlyArray<Int32Array | readonly number[]>): Promise<Float32Array>;
  embedModelInfo(handle: NativeEncoderHandle): NativeEncoderInfo;
  /** Frees the model once a batch in flight has finished; later calls throw code 'unloaded'. */
  embedUnload(handle: NativeEncoderHandle): Promise<void>;
}

// ---------------------------------------------------------------------------------------------

/** The whole addon. */
export interface NativeAddon extends CoreExports, LlmExports, EmbedExports, TabularExports {}

/** Every export, checked when the addon loads (a stale build is refused with the names it lacks). */
export const NATIVE_EXPORTS = [
  'engineInfo',
  'gemmF32',
  'gemmF32Async',
  'gemvF32',
  'gemvF32Async',
  'llmLoadModel',
  'llmGenerate',
  'llmLogits',
  'llmEmbed',
  'llmCancel',
  'llmStats',
  'llmModelInfo',
  'llmUnload',
  'llmSetTokenBytes',
  'llmCompileGrammar',
  'llmGrammarStates',
  'llmOptionLimits',
  'embedLoadModel',
  'embedRun',
  'embedModelInfo',
  'embedUnload',
  'tabularCompile',
] as const satisfies readonly (keyof NativeAddon)[];

// A key of NativeAddon missing from NATIVE_EXPORTS fails to compile here.
type Unlisted = Exclude<keyof NativeAddon, (typeof NATIVE_EXPORTS)[number]>;
const everyExportListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyExportListed;
