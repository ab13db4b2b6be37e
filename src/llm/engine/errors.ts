// Typed errors of the LLM engine. Each has a stable `code` for the HTTP layer to map; the codes
// are the addon's own (NativeErrorCode), so a native error maps by its code alone.
import { nativeErrorCode, withNativeStack } from '../../native/errors.js';

export type LlmErrorCode =
  | 'overloaded' // the wait queue is full (HTTP 429)
  | 'context_length' // the prompt is longer than the model's context (HTTP 400)
  | 'kv_cache' // the prompt does not fit the KV cache budget at all (HTTP 400)
  | 'unloaded' // the model was unloaded (HTTP 503)
  | 'load_failed' // the GGUF file could not be loaded
  | 'cancelled' // the caller cancelled the request (nobody waits for its answer)
  | 'engine'; // the forward pass failed

export class LlmEngineError extends Error {
  override name = 'LlmEngineError';
  readonly code: LlmErrorCode;

  constructor(code: LlmErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** The model's wait queue is full; retry later. */
export class OverloadedError extends LlmEngineError {
  override name = 'OverloadedError';
  declare readonly code: 'overloaded';

  constructor(message: string) {
    super('overloaded', message);
  }
}

/** The prompt does not fit the context (or the KV cache budget). */
export class ContextLengthError extends LlmEngineError {
  override name = 'ContextLengthError';

  constructor(code: 'context_length' | 'kv_cache', message: string) {
    super(code, message);
  }
}

/**
 * An error of the addon as the engine's typed error, with the caller's stack: the engine's
 * refusals and a failed load by their code; argument errors (TypeError / RangeError with code
 * 'invalid_argument') and anything else unchanged.
 */
export function fromNative(error: unknown): unknown {
  const code = nativeErrorCode(error);
  if (code === undefined) return error;
  const native = error as Error;
  switch (code) {
    case 'overloaded':
      return withNativeStack(new OverloadedError(native.message), native);
    case 'context_length':
    case 'kv_cache':
      return withNativeStack(new ContextLengthError(code, native.message), native);
    case 'unloaded':
    case 'load_failed':
      return withNativeStack(new LlmEngineError(code, native.message), native);
    default:
      return error;
  }
}
