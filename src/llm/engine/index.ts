// The native LLM engine: GGUF loading, batched forward passes, sampling, streaming.
export {
  Generation,
  LlmModel,
  loadModel,
  type FinishReason,
  type GenerateOptions,
  type GeneratedToken,
  type GenerationResult,
  type GenerationTimings,
  type LlmGrammar,
  type LlmModelInfo,
  type LlmModelStats,
  type LoadModelOptions,
} from './model.js';
export { ContextLengthError, LlmEngineError, OverloadedError, type LlmErrorCode } from './errors.js';
