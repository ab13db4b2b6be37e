// The two OpenAI completion endpoints as forms of one request: what the prompt is (chat messages
// through the model's template, or plain text), which grammar constrains the output (a response
// format, or tools), and the shape of each choice in a whole answer and in stream chunks. A form
// is per request; choice(i) gives the renderer of choice i (n > 1 makes several), which keeps the
// state a streamed choice needs (its tool-call stream, its text offset).
import type { LlmInstance } from '../library/instance.js';
import type { Tokenizer } from '../tokenizer/index.js';
import type { CompletionResult, PromptField } from './completion.js';
import { compiledGrammar, type OutputConstraint } from './constraint.js';
import { chatLogprobs, textLogprobs, type TokenLogprob } from './logprobs.js';
import type { ResponseFormat } from './response-format.js';
import type { ChatMessage } from './template.js';
import { parseToolCalls, ToolCallStream, toolCallId, type ChatDelta } from './tool-call-stream.js';
import { TOOL_SYNTAXES, type ToolSyntax } from './tool-formats.js';
import type { GrammarJob } from './grammar-job.js';
import { LAZY_TRIGGERS } from './tool-grammar.js';
import type { ToolDefinition } from './tool-params.js';

export type FinishReason = CompletionResult['finishReason'];
export type Choice = Record<string, unknown>;

/** What differs between the two endpoints: the prompt, the grammar, and the shape of the answer objects. */
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
  constraint(instance: LlmInstance): Promise<OutputConstraint | undefined>;
  /** The renderer of choice `index` (after prompt() has run). */
  choice(index: number): ChoiceForm;
}

/** One choice of an answer, whole or as stream chunks. */
export interface ChoiceForm {
  whole(text: string, finish: FinishReason): Choice;
  /** The choice of the first chunk; then one chunk per choice for each text delta, and at the end (the last one carries the finish reason). */
  opening(): Choice;
  deltas(text: string): Choice[];
  closing(finish: FinishReason): Choice[];
  /** `logprobs` of a choice holding these tokens. */
  logprobs(entries: readonly TokenLogprob[]): Record<string, unknown>;
}

/** The tools a chat request offers and how the model may use them (tool_choice "none" offers none). */
export interface ToolsRequest {
  readonly tools: readonly ToolDefinition[];
  readonly choice: 'auto' | 'required' | { readonly name: string };
  readonly parallel: boolean;
}

/** The grammar of a JSON response format (none for text). */
async function formatConstraint(instance: LlmInstance, format: ResponseFormat): Promise<OutputConstraint | undefined> {
  if (format.type === 'text') return undefined;
  const job: GrammarJob = format.type === 'json_object' ? { kind: 'json_object' } : { kind: 'json_schema', schema: format.schema };
  return { grammar: await compiledGrammar(instance, job) };
}

/** POST /v1/[<model_id>/]chat/completions: messages through the model's chat template. */
export class ChatForm implements CompletionForm {
  readonly object = 'chat.completion';
  readonly chunkObject = 'chat.completion.chunk';
  readonly idPrefix = 'chatcmpl-';
  readonly promptField = 'messages';
  readonly startOfText = false;
  /** Known once prompt() has run: the instance's tokenizer, and with tools its template's call syntax. */
  private tokenizer: Tokenizer | null = null;
  private syntax: ToolSyntax | null = null;

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

  async constraint(instance: LlmInstance): Promise<OutputConstraint | undefined> {
    const t = this.tools;
    if (!t) return formatConstraint(instance, this.format);
    const family = instance.template.toolFamily;
    const grammar = await compiledGrammar(instance, { kind: 'tools', family, tools: t.tools, choice: t.choice, parallel: t.parallel });
    return t.choice === 'auto' ? { grammar, trigger: LAZY_TRIGGERS[family] } : { grammar };
  }

  choice(index: number): ChoiceForm {
    return new ChatChoice(index, this.tokenizer!, this.syntax);
  }
}

/** One chat choice: `message` whole, `delta` streamed; with tools, calls split from the content. */
class ChatChoice implements ChoiceForm {
  private stream: ToolCallStream | null = null;
  private streamedCalls = false;

  constructor(
    private readonly index: number,
    private readonly tokenizer: Tokenizer,
    private readonly syntax: ToolSyntax | null,
  ) {}

  whole(text: string, finish: FinishReason): Choice {
    const index = this.index;
    if (!this.syntax) return { index, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finish };
    const { content, calls } = parseToolCalls(this.syntax, text);
    if (calls.length === 0) return { index, message: { role: 'assistant', content: content ?? '' }, logprobs: null, finish_reason: finish };
    const toolCalls = calls.map((c) => ({ id: toolCallId(), type: 'function', function: { name: c.name, arguments: c.arguments } }));
    return { index, message: { role: 'assistant', content, tool_calls: toolCalls }, logprobs: null, finish_reason: finish === 'stop' ? 'tool_calls' : finish };
  }

  opening(): Choice {
    if (this.syntax) this.stream = new ToolCallStream(this.syntax);
    return { index: this.index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null };
  }

  deltas(text: string): Choice[] {
    if (!this.stream) return [{ index: this.index, delta: { content: text }, logprobs: null, finish_reason: null }];
    return this.stream.push(text).map((d) => this.chunkOf(d));
  }

  closing(finish: FinishReason): Choice[] {
    const rest = this.stream ? this.stream.finish().map((d) => this.chunkOf(d)) : [];
    const reason = this.streamedCalls && finish === 'stop' ? 'tool_calls' : finish;
    return [...rest, { index: this.index, delta: {}, logprobs: null, finish_reason: reason }];
  }

  logprobs(entries: readonly TokenLogprob[]): Record<string, unknown> {
    return chatLogprobs(this.tokenizer, entries);
  }

  private chunkOf(delta: ChatDelta): Choice {
    if ('tool_calls' in delta) this.streamedCalls = true;
    return { index: this.index, delta, logprobs: null, finish_reason: null };
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

  constraint(instance: LlmInstance): Promise<OutputConstraint | undefined> {
    return formatConstraint(instance, this.format);
  }

  choice(index: number): ChoiceForm {
    return new TextChoice(index, this.tokenizer!);
  }
}

/** One legacy completion choice: `text`, whole or in pieces. */
class TextChoice implements ChoiceForm {
  /** Where the next token's text starts in the answer (legacy logprobs' text_offset). */
  private textOffset = 0;

  constructor(
    private readonly index: number,
    private readonly tokenizer: Tokenizer,
  ) {}

  whole(text: string, finish: FinishReason): Choice {
    return { index: this.index, text, logprobs: null, finish_reason: finish };
  }

  opening(): Choice {
    return { index: this.index, text: '', logprobs: null, finish_reason: null };
  }

  deltas(text: string): Choice[] {
    return [{ index: this.index, text, logprobs: null, finish_reason: null }];
  }

  closing(finish: FinishReason): Choice[] {
    return [{ index: this.index, text: '', logprobs: null, finish_reason: finish }];
  }

  logprobs(entries: readonly TokenLogprob[]): Record<string, unknown> {
    const { value, end } = textLogprobs(this.tokenizer, entries, this.textOffset);
    this.textOffset = end;
    return value;
  }
}
