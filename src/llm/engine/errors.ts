// Typed errors of the LLM engine. Each has a stable `code` for the HTTP layer to map.

export type LlmErrorCode =
  | 'overloaded' // the wait queue is full (HTTP 429)
  | 'context_length' // the prompt is longer than the model's context (HTTP 400)
  | 'kv_cache' // the prompt does not fit the KV cache budget at all (HTTP 400)
  | 'unloaded' // the model was unloaded (HTTP 503)
  | 'load_failed' // the GGUF file could not be loaded
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

/** Maps an error thrown by the addon (which carries `code`) to the typed classes. */
export function fromNative(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const code = (error as Error & { code?: unknown }).code;
  const message = error.message.replace(/^llm\w+: /, '');
  switch (code) {
    case 'overloaded':
      return new OverloadedError(message);
    case 'context_length':
    case 'kv_cache':
      return new ContextLengthError(code, message);
    case 'unloaded':
      return new LlmEngineError('unloaded', message);
    default:
      return error;
  }
}
