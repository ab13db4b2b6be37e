// One completion on a loaded model: prompt tokens in, text deltas out (detokenized as a stream,
// stop strings held back), with the timings the metrics need. Shared by the chat and legacy
// completion routes, streaming or not.
import { ApiError, invalidArgument, unavailable } from '../../errors.js';
import { ContextLengthError, LlmEngineError, OverloadedError, type Generation } from '../engine/index.js';
import { StreamDecoder } from '../tokenizer/index.js';
import type { LlmInstance } from '../library/instance.js';
import type { SamplingParams } from './params.js';
import { StopMatcher } from './stop-strings.js';
import type { OutputConstraint } from './constraint.js';
import type { TokenLogprob } from './logprobs.js';

export interface CompletionResult {
  finishReason: 'stop' | 'length';
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens whose KV came from the prefix cache. */
  cachedTokens: number;
  /** From the request's arrival to the first generated token. */
  ttftMs: number | null;
  /** Mean gap between generated tokens after the first. */
  tpotMs: number | null;
  queuedMs: number;
}

/** The request field that holds the prompt: `messages` (chat), `prompt` (legacy completions) or `input` (embeddings). */
export type PromptField = 'messages' | 'prompt' | 'input';

/** Engine errors as HTTP errors: full queue 429, oversized prompt 400 (naming `promptField`), unloaded 503. */
export function engineError(err: unknown, promptField: PromptField = 'messages'): unknown {
  if (err instanceof OverloadedError) return new ApiError('overloaded', `the model is overloaded: ${err.message.replace(/^the model is overloaded: /, '')}; retry shortly`, null, { 'retry-after': '1' });
  if (err instanceof ContextLengthError) return invalidArgument(err.message, promptField);
  if (err instanceof LlmEngineError && err.code === 'unloaded') return unavailable('the model is being unloaded or replaced; retry');
  return err;
}

export class Completion {
  private readonly generation: Generation;
  private readonly arrived: number;
  private firstTokenAt: number | null = null;
  private lastTokenAt: number | null = null;
  private count = 0;
  private stoppedByString = false;
  private stoppedByEog = false;
  /** Log-probabilities of the tokens generated since takeLogprobs() last ran. */
  private logprobs: TokenLogprob[] = [];

  /** Starts generating at once (so that queueing starts now); iterate `text()` for the deltas. */
  constructor(
    private readonly instance: LlmInstance,
    private readonly promptTokens: number[],
    private readonly params: SamplingParams,
    arrivedAt: number,
    /** The text starts here (an empty prompt): drop the SentencePiece space before the first word. */
    private readonly startOfText = false,
    private readonly promptField: PromptField = 'messages',
    /** A grammar the output must match (response_format, tools). */
    private readonly constraint?: OutputConstraint,
  ) {
    this.arrived = arrivedAt;
    const context = instance.info.contextLength;
    const room = context - promptTokens.length;
    if (room <= 0) {
      throw invalidArgument(`the prompt has ${promptTokens.length} tokens; the model's context is ${context} tokens, prompt and completion together; shorten ${promptField}`, promptField);
    }
    try {
      this.generation = instance.model.generate(promptTokens, {
        // max_tokens beyond the room the prompt leaves is clamped to it, as llama.cpp's server and
        // Ollama do: the answer then ends with finish_reason "length" instead of failing.
        maxTokens: Math.min(params.maxTokens ?? room, room),
        temperature: params.temperature,
        topK: params.topK,
        topP: params.topP,
        minP: params.minP,
        ...(params.seed !== undefined ? { seed: params.seed } : {}),
        frequencyPenalty: params.frequencyPenalty,
        presencePenalty: params.presencePenalty,
        cacheSalt: params.cacheSalt,
        ...(params.logprobs !== null ? { logprobs: params.logprobs } : {}),
        ...(constraint ? { grammar: constraint.grammar.handle } : {}),
        ...(constraint?.trigger !== undefined ? { grammarTrigger: constraint.trigger } : {}),
      });
    } catch (err) {
      throw engineError(err, this.promptField);
    }
  }

  /** Text deltas, never splitting a character or leaking part of a stop string. */
  async *text(): AsyncGenerator<string, CompletionResult> {
    // Under a grammar the text is what the grammar matched: special tokens as their text too.
    const decoder = new StreamDecoder(this.instance.tokenizer, { startOfText: this.startOfText, special: this.constraint !== undefined });
    const stops = new StopMatcher(this.params.stop);
    try {
      for await (const { token, logprob, top } of this.generation) {
        // The engine stops at the file's EOS / EOT ids only; a chat turn may end with another
        // end-of-generation token (Gemma's <end_of_turn>, Phi-3's <|end|>, Llama 3's <|eom_id|>,
        // gpt-oss's <|call|>), which ends the answer here, as llama.cpp does, and is not part of it.
        if (this.instance.tokenizer.isEog(token)) {
          this.stoppedByEog = true;
          break;
        }
        if (logprob !== undefined) this.logprobs.push({ token, logprob, top: top ?? [] });
        const now = performance.now();
        this.firstTokenAt ??= now;
        this.lastTokenAt = now;
        this.count++;
        const { emit, stopped } = stops.push(decoder.push(token));
        if (emit) yield emit;
        if (stopped) {
          this.stoppedByString = true;
          break;
        }
      }
      if (!this.stoppedByString) {
        // (after an end-of-generation token too: held-back text that is not a stop goes out)
        const rest = stops.push(decoder.flush());
        const tail = rest.emit + (rest.stopped ? '' : stops.flush());
        if (rest.stopped) this.stoppedByString = true;
        if (tail) yield tail;
      }
    } catch (err) {
      throw engineError(err, this.promptField);
    } finally {
      // Leaving early (a stop string, a disconnect) cancels the sequence and frees its cache.
      this.generation.cancel();
    }
    const result = await this.generation.result.catch((err: unknown) => {
      throw engineError(err, this.promptField);
    });
    return {
      finishReason: this.stoppedByString || this.stoppedByEog || result.finishReason !== 'length' ? 'stop' : 'length',
      promptTokens: this.promptTokens.length,
      completionTokens: this.count,
      cachedTokens: result.cachedTokens,
      ttftMs: this.firstTokenAt === null ? null : this.firstTokenAt - this.arrived,
      tpotMs: this.count > 1 && this.firstTokenAt !== null && this.lastTokenAt !== null ? (this.lastTokenAt - this.firstTokenAt) / (this.count - 1) : null,
      queuedMs: result.timings.queuedMs,
    };
  }

  /** Settles once the prompt has been processed (its full blocks are then in the prefix cache). */
  get started(): Promise<void> {
    return this.generation.started;
  }

  /** The log-probabilities of the tokens generated since the last call (logprobs asked for). */
  takeLogprobs(): TokenLogprob[] {
    const out = this.logprobs;
    this.logprobs = [];
    return out;
  }

  cancel(): void {
    this.generation.cancel();
  }
}
