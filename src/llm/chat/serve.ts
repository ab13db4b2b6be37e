// One OpenAI completion request served on a library model, below the HTTP route: take the live
// instance, start the generation, count the request in the metrics, and give the answer either
// whole (one JSON object) or as the chunk objects of a stream, in the form of its endpoint (chat
// completions or legacy completions). How chunks reach the client (SSE) is the route's business.
import crypto from 'node:crypto';
import type { LlmInstance } from '../library/instance.js';
import type { LibraryService } from '../library/service.js';
import type { LlmMetrics } from '../metrics.js';
import { Completion, type CompletionResult, type PromptField } from './completion.js';
import type { SamplingParams } from './params.js';
import type { ChatMessage } from './template.js';

type FinishReason = CompletionResult['finishReason'];
type Choice = Record<string, unknown>;

/** What differs between the two endpoints: the prompt, and the shape of the answer objects. */
export interface CompletionForm {
  /** `object` of the whole answer, and of each streamed chunk. */
  readonly object: string;
  readonly chunkObject: string;
  readonly idPrefix: string;
  /** The request field an oversized prompt is reported against. */
  readonly promptField: PromptField;
  /** The text starts here (an empty prompt): the first word gets no SentencePiece space. */
  readonly startOfText: boolean;
  /** The prompt's tokens on the instance that runs it. */
  prompt(instance: LlmInstance): number[];
  /** The choices of the whole answer. */
  whole(text: string, finish: FinishReason): Choice[];
  /** The choices of the first chunk, of each chunk of text, and of the last chunk. */
  opening(): Choice[];
  delta(text: string): Choice[];
  closing(finish: FinishReason): Choice[];
}

/** POST /v1/[<model_id>/]chat/completions: messages through the model's chat template. */
export class ChatForm implements CompletionForm {
  readonly object = 'chat.completion';
  readonly chunkObject = 'chat.completion.chunk';
  readonly idPrefix = 'chatcmpl-';
  readonly promptField = 'messages';
  readonly startOfText = false;

  constructor(private readonly messages: ChatMessage[]) {}

  prompt(instance: LlmInstance): number[] {
    return instance.chatPrompt(instance.template.render(this.messages));
  }

  whole(text: string, finish: FinishReason): Choice[] {
    return [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finish }];
  }

  opening(): Choice[] {
    return [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }];
  }

  delta(text: string): Choice[] {
    return [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }];
  }

  closing(finish: FinishReason): Choice[] {
    return [{ index: 0, delta: {}, logprobs: null, finish_reason: finish }];
  }
}

/** POST /v1/[<model_id>/]completions: a plain text prompt, continued. */
export class TextForm implements CompletionForm {
  readonly object = 'text_completion';
  readonly chunkObject = 'text_completion';
  readonly idPrefix = 'cmpl-';
  readonly promptField = 'prompt';
  readonly startOfText: boolean;

  constructor(private readonly text: string) {
    this.startOfText = text === '';
  }

  prompt(instance: LlmInstance): number[] {
    return instance.textPrompt(this.text);
  }

  whole(text: string, finish: FinishReason): Choice[] {
    return [{ index: 0, text, logprobs: null, finish_reason: finish }];
  }

  opening(): Choice[] {
    return this.delta('');
  }

  delta(text: string): Choice[] {
    return [{ index: 0, text, logprobs: null, finish_reason: null }];
  }

  closing(finish: FinishReason): Choice[] {
    return [{ index: 0, text: '', logprobs: null, finish_reason: finish }];
  }
}

const usageJson = (r: CompletionResult) => ({ prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens });

/** A generation under way, answered once: whole() or chunks(). */
export class Answer {
  private readonly base: { id: string; created: number; model: string };

  constructor(
    private readonly modelId: string,
    private readonly form: CompletionForm,
    private readonly params: SamplingParams,
    private readonly completion: Completion,
    private readonly metrics: LlmMetrics,
  ) {
    this.base = { id: `${form.idPrefix}${crypto.randomBytes(12).toString('hex')}`, created: Math.floor(Date.now() / 1000), model: modelId };
  }

  /** The whole answer, once the generation has finished. */
  async whole(): Promise<Record<string, unknown>> {
    let text = '';
    const it = this.completion.text();
    let step = await it.next();
    while (!step.done) {
      text += step.value;
      step = await it.next();
    }
    this.metrics.requestFinished(this.modelId, step.value);
    return { ...this.base, object: this.form.object, choices: this.form.whole(text, step.value.finishReason), usage: usageJson(step.value) };
  }

  /**
   * The chunks of a stream: the opening one at once, one per text delta, the closing one with the
   * finish reason, and the usage when asked for. Returning the generator early stops and cancels
   * the generation.
   */
  async *chunks(): AsyncGenerator<Record<string, unknown>> {
    const usage = this.params.includeUsage ? { usage: null } : {};
    const chunk = (choices: Choice[]) => ({ ...this.base, object: this.form.chunkObject, choices, ...usage });
    yield chunk(this.form.opening());
    const it = this.completion.text();
    try {
      let step = await it.next();
      while (!step.done) {
        yield chunk(this.form.delta(step.value));
        step = await it.next();
      }
      this.metrics.requestFinished(this.modelId, step.value);
      yield chunk(this.form.closing(step.value.finishReason));
      if (this.params.includeUsage) yield { ...this.base, object: this.form.chunkObject, choices: [], usage: usageJson(step.value) };
    } finally {
      // Leaving early (the client went away) ends the text stream, which cancels the sequence.
      await it.return(undefined as never);
    }
  }

  cancel(): void {
    this.completion.cancel();
  }
}

/**
 * Starts one completion on the live instance of `modelId`. There is no await between taking the
 * instance and starting the generation, so an instance switch never unloads a model under a
 * request that has not reached the engine yet.
 */
export function startAnswer(library: LibraryService, metrics: LlmMetrics, modelId: string, form: CompletionForm, params: SamplingParams): Answer {
  const arrived = performance.now();
  const instance = library.instance(modelId);
  metrics.requestArrived(modelId);
  const completion = new Completion(instance, form.prompt(instance), params, arrived, form.startOfText, form.promptField);
  return new Answer(modelId, form, params, completion, metrics);
}
