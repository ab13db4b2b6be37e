// The LLM engine's TypeScript interface: load a GGUF model, generate token streams with
// continuous batching, read logits, watch stats, unload. All heavy work runs natively (the load
// on a libuv worker, decoding on the model's scheduler thread); tokens arrive through one
// thread-safe callback per model and are routed here to each Generation. Arguments are checked,
// and defaults applied, by the addon alone (llmOptionLimits lists them); its refusals arrive here
// as the typed errors of errors.ts.
import { loadAddon } from '../../native/addon.js';
import type {
  LlmExports,
  NativeFinishEvent,
  NativeGenerateOptions,
  NativeGrammarHandle,
  NativeLlmEvent,
  NativeLoadOptions,
  NativeModelHandle,
  NativeModelInfo,
  NativeStats,
} from '../../native/surface.js';
import { nativeErrorCode, withNativeStack } from '../../native/errors.js';
import { LlmEngineError, fromNative } from './errors.js';

/** llmLoadModel's options, passed through unchanged (the addon checks them and applies defaults). */
export type LoadModelOptions = NativeLoadOptions;

/** A grammar compiled for one model: pass `handle` as generate()'s `grammar`. */
export interface LlmGrammar {
  readonly handle: NativeGrammarHandle;
  /** Parser states met so far (its cache of masks and transitions). */
  states(): number;
}

export interface GenerateOptions extends NativeGenerateOptions {
  /** Aborting cancels the sequence (finishReason 'cancelled'). */
  signal?: AbortSignal;
}

export interface GeneratedToken {
  token: number;
  /** With the logprobs option: ln p(token) after the penalties, and the most likely alternatives. */
  logprob?: number;
  top?: Array<[number, number]>;
}

export type FinishReason = 'stop' | 'length' | 'cancelled';

export interface GenerationTimings {
  /** Waiting for admission. */
  queuedMs: number;
  /** Admission to the first generated token (prompt processing). */
  prefillMs: number;
  /** First to last generated token. */
  decodeMs: number;
  /** Generated tokens per second after the first one (0 with fewer than two tokens). */
  decodeTokensPerSecond: number;
}

export interface GenerationResult {
  /** 'stop': an end-of-sequence token (not included in tokens); 'length': maxTokens or the context. */
  finishReason: FinishReason;
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens whose KV came from the prefix cache (their prefill was skipped). */
  cachedTokens: number;
  tokens: number[];
  timings: GenerationTimings;
}

export type LlmModelInfo = NativeModelInfo;
export type LlmModelStats = NativeStats;

type Listener = (event: NativeLlmEvent) => void;

/**
 * One running generation: an async iterator of tokens whose final `{done: true}` result carries
 * the GenerationResult (also available as `result`). Leaving a `for await` loop early, calling
 * `return()` or `cancel()`, or aborting the signal cancels the sequence and frees its KV blocks.
 */
export class Generation implements AsyncIterator<GeneratedToken, GenerationResult> {
  /** Settles when the sequence finishes; rejects if the engine failed. */
  readonly result: Promise<GenerationResult>;
  /** Settles at the first event: the prompt has been processed (or the sequence ended). */
  readonly started: Promise<void>;
  private markStarted!: () => void;
  private readonly queue: GeneratedToken[] = [];
  private readonly tokens: number[] = [];
  private waiter: (() => void) | null = null;
  private final: GenerationResult | null = null;
  private failure: Error | null = null;
  private settle!: { resolve: (r: GenerationResult) => void; reject: (e: Error) => void };

  /** @internal */
  constructor(
    readonly id: number,
    private readonly cancelFn: () => void,
  ) {
    this.result = new Promise<GenerationResult>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    this.result.catch(() => {}); // reported through next() / result; never unhandled
    this.started = new Promise<void>((resolve) => {
      this.markStarted = resolve;
    });
  }

  /** @internal */
  onEvent(event: NativeLlmEvent): void {
    this.markStarted();
    if (event.type === 'token') {
      this.tokens.push(event.token);
      this.queue.push(event.logprob === undefined ? { token: event.token } : { token: event.token, logprob: event.logprob, top: event.top ?? [] });
    } else if (event.finishReason === 'error') {
      this.failure = new LlmEngineError('engine', event.error ?? 'the forward pass failed');
      this.settle.reject(this.failure);
    } else {
      this.final = finishResult(event, this.tokens);
      this.settle.resolve(this.final);
    }
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  async next(): Promise<IteratorResult<GeneratedToken, GenerationResult>> {
    for (;;) {
      const t = this.queue.shift();
      if (t) return { done: false, value: t };
      if (this.failure) throw this.failure;
      if (this.final) return { done: true, value: this.final };
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }

  /** Cancels the sequence (if still running) and resolves with its final result. */
  async return(): Promise<IteratorResult<GeneratedToken, GenerationResult>> {
    this.cancel();
    this.queue.length = 0;
    return { done: true, value: await this.result };
  }

  /** Cancels the sequence; the result's finishReason becomes 'cancelled' unless it already finished. */
  cancel(): void {
    if (!this.final && !this.failure) this.cancelFn();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

function finishResult(e: NativeFinishEvent, tokens: number[]): GenerationResult {
  const reason = e.finishReason === 'error' ? 'cancelled' : e.finishReason;
  return {
    finishReason: reason,
    promptTokens: e.promptTokens,
    completionTokens: e.completionTokens,
    cachedTokens: e.cachedTokens,
    tokens: tokens.slice(),
    timings: {
      queuedMs: e.queuedMs,
      prefillMs: e.prefillMs,
      decodeMs: e.decodeMs,
      decodeTokensPerSecond: e.completionTokens > 1 && e.decodeMs > 0 ? ((e.completionTokens - 1) * 1000) / e.decodeMs : 0,
    },
  };
}

export class LlmModel {
  private readonly listeners = new Map<number, Listener>();
  private handle: NativeModelHandle | null = null;
  private unloading: Promise<void> | null = null;
  private tokenBytesSet = false;

  /** @internal use loadModel() */
  constructor(private readonly addon: LlmExports) {}

  /** @internal */
  attach(handle: NativeModelHandle): void {
    this.handle = handle;
  }

  /** @internal routes one native batch of events to the generations. */
  dispatch(events: NativeLlmEvent[]): void {
    for (const e of events) {
      const l = this.listeners.get(e.id);
      if (!l) continue;
      if (e.type !== 'token') this.listeners.delete(e.id);
      try {
        l(e);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  private live(): NativeModelHandle {
    if (!this.handle || this.unloading) throw new LlmEngineError('unloaded', 'the model has been unloaded');
    return this.handle;
  }

  /** Architecture, dimensions, vocabulary, context, tensor types and memory. */
  info(): LlmModelInfo {
    const h = this.live();
    return { ...this.addon.llmModelInfo(h) };
  }

  /** Running and waiting sequences, KV blocks used / reserved / total. */
  stats(): LlmModelStats {
    return this.addon.llmStats(this.live());
  }

  /**
   * Starts generating after promptTokens. Throws OverloadedError when the wait queue is full,
   * ContextLengthError when the prompt does not fit, TypeError / RangeError on bad arguments.
   */
  generate(promptTokens: number[] | Int32Array, options: GenerateOptions = {}): Generation {
    const h = this.live();
    if (typeof options !== 'object' || options === null) throw new TypeError('generate: options must be an object');
    const { signal, ...o } = options;
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('generate: signal must be an AbortSignal');
    let id: number;
    try {
      id = this.addon.llmGenerate(h, promptTokens, o);
    } catch (error) {
      throw fromNative(error);
    }
    const gen = new Generation(id, () => {
      if (this.handle) this.addon.llmCancel(this.handle, id);
    });
    let onAbort: (() => void) | undefined;
    if (signal) {
      onAbort = () => gen.cancel();
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    this.listeners.set(id, (e) => {
      if (e.type !== 'token' && onAbort) signal?.removeEventListener('abort', onAbort);
      gen.onEvent(e);
    });
    return gen;
  }

  /**
   * Runs the tokens through the model and returns the logits: the last position's
   * (Float32Array of vocabSize), or every position's ([tokens.length][vocabSize] flattened)
   * with allPositions. Goes through the same scheduler as generate().
   */
  logits(tokens: number[] | Int32Array, options: { allPositions?: boolean } = {}): Promise<Float32Array> {
    const h = this.live();
    let id: number;
    try {
      id = this.addon.llmLogits(h, tokens, options.allPositions === true);
    } catch (error) {
      return Promise.reject(fromNative(error));
    }
    return new Promise<Float32Array>((resolve, reject) => {
      this.listeners.set(id, (e) => {
        if (e.type === 'logits' && e.logits) resolve(e.logits);
        else if (e.type !== 'token') reject(new LlmEngineError(e.finishReason === 'cancelled' ? 'unloaded' : 'engine', e.error ?? `logits request ${e.finishReason}`));
      });
    });
  }

  /**
   * Embeds the tokens by last-token pooling, as decoder embedding models (e5-mistral, gte-Qwen2)
   * are used: the last position's hidden state after the model's output norm, L2-normalized
   * (Float32Array of embeddingLength). Goes through the same scheduler as generate().
   */
  embed(tokens: number[] | Int32Array, options: { signal?: AbortSignal } = {}): Promise<Float32Array> {
    const h = this.live();
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(new LlmEngineError('cancelled', 'embedding request cancelled'));
    let id: number;
    try {
      id = this.addon.llmEmbed(h, tokens);
    } catch (error) {
      return Promise.reject(fromNative(error));
    }
    // Aborting cancels the request in the engine (its kDone then says cancelled).
    const onAbort = () => {
      if (this.handle) this.addon.llmCancel(this.handle, id);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    return new Promise<Float32Array>((resolve, reject) => {
      this.listeners.set(id, (e) => {
        if (e.type === 'token') return;
        signal?.removeEventListener('abort', onAbort);
        if (e.type === 'embedding' && e.embedding) resolve(e.embedding);
        else if (signal?.aborted) reject(new LlmEngineError('cancelled', 'embedding request cancelled'));
        else reject(new LlmEngineError(e.finishReason === 'cancelled' ? 'unloaded' : 'engine', e.error ?? `embedding request ${e.finishReason}`));
      });
    });
  }

  /** Whether the vocabulary's bytes have been given (setTokenBytes), which grammars need. */
  get hasTokenBytes(): boolean {
    return this.tokenBytesSet;
  }

  /** The bytes each token id stands for (empty for control tokens), once, before compileGrammar. */
  setTokenBytes(tokens: readonly Uint8Array[]): void {
    const h = this.live();
    const offsets = new Uint32Array(tokens.length + 1);
    for (let t = 0; t < tokens.length; t++) offsets[t + 1] = offsets[t]! + tokens[t]!.length;
    const bytes = new Uint8Array(offsets[tokens.length]!);
    tokens.forEach((b, t) => bytes.set(b, offsets[t]!));
    this.addon.llmSetTokenBytes(h, bytes, offsets);
    this.tokenBytesSet = true;
  }

  /** Compiles an encoded byte grammar for this model (throws RangeError naming what is wrong with it). */
  compileGrammar(encoded: Int32Array): LlmGrammar {
    const handle = this.addon.llmCompileGrammar(this.live(), encoded);
    return { handle, states: () => this.addon.llmGrammarStates(handle) };
  }

  /** Cancels every sequence, stops the scheduler, unmaps the file. Idempotent. */
  unload(): Promise<void> {
    if (!this.handle) return Promise.resolve();
    if (!this.unloading) {
      const h = this.handle;
      this.unloading = this.addon.llmUnload(h).then(() => {
        this.handle = null;
      });
    }
    return this.unloading;
  }
}

/** Loads a GGUF decoder (llama with or without experts, qwen2, qwen3, qwen3moe, gemma2, gemma3 or phi3; F32/F16/BF16/Q8_0/Q4_0/Q4_K/Q6_K) off the JS thread. */
export async function loadModel(path: string, options: LoadModelOptions = {}): Promise<LlmModel> {
  const addon = loadAddon();
  const model = new LlmModel(addon);
  let handle: NativeModelHandle;
  try {
    handle = await addon.llmLoadModel(path, options, (events) => model.dispatch(events));
  } catch (error) {
    const code = nativeErrorCode(error);
    if (code !== 'load_failed' && code !== 'out_of_memory') throw error; // a bad argument
    throw withNativeStack(new LlmEngineError('load_failed', (error as Error).message), error as Error);
  }
  model.attach(handle);
  return model;
}
