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
import { compiledGrammar, type OutputConstraint } from './constraint.js';
import type { ResponseFormat } from './response-format.js';
import { jsonObjectGrammar, jsonSchemaGrammar } from '../structured/json-schema.js';
import { parseToolCalls, ToolCallStream, toolCallId, type ChatDelta } from './tool-call-stream.js';
import { TOOL_SYNTAXES, type ToolSyntax } from './tool-formats.js';
import { eagerToolGrammar, LAZY_TRIGGERS, lazyToolGrammar } from './tool-grammar.js';
import type { ToolDefinition } from './tool-params.js';
import { chatLogprobs, textLogprobs, type TokenLogprob } from './logprobs.js';
import type { Tokenizer } from '../tokenizer/index.js';

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
  /** The grammar the output must match on that instance, if the request asks for one. */
  constraint(instance: LlmInstance): OutputConstraint | undefined;
  /** The choices of the whole answer. */
  whole(text: string, finish: FinishReason): Choice[];
  /** The choice of the first chunk; then one chunk per choice for each text delta, and at the end (the last one carries the finish reason). */
  opening(): Choice;
  deltas(text: string): Choice[];
  closing(finish: FinishReason): Choice[];
  /** `logprobs` of a choice holding these tokens (after prompt() has run). */
  logprobs(entries: readonly TokenLogprob[]): Record<string, unknown>;
}

/** The tools a chat request offers and how the model may use them (tool_choice "none" offers none). */
export interface ToolsRequest {
  readonly tools: readonly ToolDefinition[];
  readonly choice: 'auto' | 'required' | { readonly name: string };
  readonly parallel: boolean;
}

/** The grammar of a JSON response format (none for text). */
function formatConstraint(instance: LlmInstance, format: ResponseFormat): OutputConstraint | undefined {
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return { grammar: compiledGrammar(instance, { json_object: true }, jsonObjectGrammar, 'response_format') };
  const field = 'response_format.json_schema.schema';
  return { grammar: compiledGrammar(instance, { json_schema: format.schema }, () => jsonSchemaGrammar(format.schema), field) };
}

/** POST /v1/[<model_id>/]chat/completions: messages through the model's chat template. */
export class ChatForm implements CompletionForm {
  readonly object = 'chat.completion';
  readonly chunkObject = 'chat.completion.chunk';
  readonly idPrefix = 'chatcmpl-';
  readonly promptField = 'messages';
  readonly startOfText = false;
  /** With tools: the call syntax of the instance's template (known once prompt() has run), and the stream of a streamed answer. */
  private syntax: ToolSyntax | null = null;
  private stream: ToolCallStream | null = null;
  private streamedCalls = false;
  private tokenizer: Tokenizer | null = null;

  constructor(
    private readonly messages: ChatMessage[],
    private readonly format: ResponseFormat = { type: 'text' },
    private readonly tools?: ToolsRequest,
  ) {}

  prompt(instance: LlmInstance): number[] {
    this.tokenizer = instance.tokenizer;
    if (this.tools) this.syntax = TOOL_SYNTAXES[instance.template.toolFamily];
    return instance.chatPrompt(instance.template.render(this.messages, this.tools?.tools ?? []));
  }

  constraint(instance: LlmInstance): OutputConstraint | undefined {
    const t = this.tools;
    if (!t) return formatConstraint(instance, this.format);
    const family = instance.template.toolFamily;
    const source = { tools: t.tools, choice: t.choice, parallel: t.parallel, family };
    if (t.choice === 'auto') {
      return { grammar: compiledGrammar(instance, source, () => lazyToolGrammar(family, t.tools, t.parallel).grammar, 'tools'), trigger: LAZY_TRIGGERS[family] };
    }
    const choice = t.choice;
    return { grammar: compiledGrammar(instance, source, () => eagerToolGrammar(family, t.tools, choice, t.parallel), 'tools') };
  }

  whole(text: string, finish: FinishReason): Choice[] {
    if (!this.syntax) return [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finish }];
    const { content, calls } = parseToolCalls(this.syntax, text);
    if (calls.length === 0) return [{ index: 0, message: { role: 'assistant', content: content ?? '' }, logprobs: null, finish_reason: finish }];
    const toolCalls = calls.map((c) => ({ id: toolCallId(), type: 'function', function: { name: c.name, arguments: c.arguments } }));
    return [{ index: 0, message: { role: 'assistant', content, tool_calls: toolCalls }, logprobs: null, finish_reason: finish === 'stop' ? 'tool_calls' : finish }];
  }

  opening(): Choice {
    if (this.syntax) this.stream = new ToolCallStream(this.syntax);
    return { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null };
  }

  deltas(text: string): Choice[] {
    if (!this.stream) return [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }];
    return this.stream.push(text).map((d) => this.chunkOf(d));
  }

  closing(finish: FinishReason): Choice[] {
    const rest = this.stream ? this.stream.finish().map((d) => this.chunkOf(d)) : [];
    const reason = this.streamedCalls && finish === 'stop' ? 'tool_calls' : finish;
    return [...rest, { index: 0, delta: {}, logprobs: null, finish_reason: reason }];
  }

  logprobs(entries: readonly TokenLogprob[]): Record<string, unknown> {
    return chatLogprobs(this.tokenizer!, entries);
  }

  private chunkOf(delta: ChatDelta): Choice {
    if ('tool_calls' in delta) this.streamedCalls = true;
    return { index: 0, delta, logprobs: null, finish_reason: null };
  }
}

/** POST /v1/[<model_id>/]completions: a plain text prompt, continued. */
export class TextForm implements CompletionForm {
  readonly object = 'text_completion';
  readonly chunkObject = 'text_completion';
  readonly idPrefix = 'cmpl-';
  readonly promptField = 'prompt';
  readonly startOfText: boolean;
  private tokenizer: Tokenizer | null = null;
  /** Where the next token's text starts in the answer (legacy logprobs' text_offset). */
  private textOffset = 0;

  constructor(
    private readonly text: string,
    private readonly format: ResponseFormat = { type: 'text' },
  ) {
    this.startOfText = text === '';
  }

  prompt(instance: LlmInstance): number[] {
    this.tokenizer = instance.tokenizer;
    return instance.textPrompt(this.text);
  }

  logprobs(entries: readonly TokenLogprob[]): Record<string, unknown> {
    const { value, end } = textLogprobs(this.tokenizer!, entries, this.textOffset);
    this.textOffset = end;
    return value;
  }

  constraint(instance: LlmInstance): OutputConstraint | undefined {
    return formatConstraint(instance, this.format);
  }

  whole(text: string, finish: FinishReason): Choice[] {
    return [{ index: 0, text, logprobs: null, finish_reason: finish }];
  }

  opening(): Choice {
    return { index: 0, text: '', logprobs: null, finish_reason: null };
  }

  deltas(text: string): Choice[] {
    return [{ index: 0, text, logprobs: null, finish_reason: null }];
  }

  closing(finish: FinishReason): Choice[] {
    return [{ index: 0, text: '', logprobs: null, finish_reason: finish }];
  }
}

const usageJson = (r: CompletionResult) => ({
  prompt_tokens: r.promptTokens,
  completion_tokens: r.completionTokens,
  total_tokens: r.promptTokens + r.completionTokens,
  prompt_tokens_details: { cached_tokens: r.cachedTokens },
});

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
    const choices = this.form.whole(text, step.value.finishReason);
    if (this.params.logprobs !== null) choices[0]!.logprobs = this.form.logprobs(this.completion.takeLogprobs());
    return { ...this.base, object: this.form.object, choices, usage: usageJson(step.value) };
  }

  /**
   * The chunks of a stream: the opening one at once, one per text delta, the closing one with the
   * finish reason, and the usage when asked for. Returning the generator early stops and cancels
   * the generation.
   */
  async *chunks(): AsyncGenerator<Record<string, unknown>> {
    const usage = this.params.includeUsage ? { usage: null } : {};
    const chunk = (choice: Choice) => ({ ...this.base, object: this.form.chunkObject, choices: [choice], ...usage });
    yield chunk(this.form.opening());
    const it = this.completion.text();
    try {
      let step = await it.next();
      while (!step.done) {
        for (const choice of this.withLogprobs(this.form.deltas(step.value))) yield chunk(choice);
        step = await it.next();
      }
      this.metrics.requestFinished(this.modelId, step.value);
      for (const choice of this.withLogprobs(this.form.closing(step.value.finishReason))) yield chunk(choice);
      if (this.params.includeUsage) yield { ...this.base, object: this.form.chunkObject, choices: [], usage: usageJson(step.value) };
    } finally {
      // Leaving early (the client went away) ends the text stream, which cancels the sequence.
      await it.return(undefined as never);
    }
  }

  /** The tokens' log-probabilities since the last chunk go on the first of these chunks (when asked for). */
  private withLogprobs(choices: Choice[]): Choice[] {
    if (this.params.logprobs === null || choices.length === 0) return choices;
    const entries = this.completion.takeLogprobs();
    if (entries.length > 0) choices[0] = { ...choices[0], logprobs: this.form.logprobs(entries) };
    return choices;
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
  const completion = new Completion(instance, form.prompt(instance), params, arrived, form.startOfText, form.promptField, form.constraint(instance));
  return new Answer(modelId, form, params, completion, metrics);
}
