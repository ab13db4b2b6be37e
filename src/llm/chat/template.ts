// Chat prompts: the model's own `tokenizer.chat_template` (Jinja) rendered with
// @huggingface/jinja, or, for a model without one, DEFAULT_CHAT_TEMPLATE below (documented in
// the README): plain "User:" / "Assistant:" turns that base models continue sensibly.
// With tools, the template gets them the way its family expects (tool-prompt.ts). The renderer's
// extra globals (strftime_now, enable_thinking) come from template-globals.ts; a template that
// ignores or refuses the system role (Gemma 2) gets the system text at the head of the first user
// message instead, as llama.cpp does.
import { Template } from '@huggingface/jinja';
import { invalidArgument } from '../../errors.js';
import { detectToolFamily, type ToolFamily } from './tool-formats.js';
import type { ToolDefinition } from './tool-params.js';
import { TEMPLATE_PRELUDE, templateGlobals } from './template-globals.js';
import { defaultToolMessages, nativeMessages, type TemplateMessage, templateTools } from './tool-prompt.js';

/** A call the assistant made earlier in the conversation; `arguments` is JSON object text. */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

export const DEFAULT_CHAT_TEMPLATE =
  "{% for message in messages %}" +
  "{% if message.role == 'system' %}{{ message.content }}\n\n" +
  "{% elif message.role == 'user' %}User: {{ message.content }}\n" +
  "{% else %}Assistant: {{ message.content }}\n{% endif %}" +
  "{% endfor %}" +
  "{% if add_generation_prompt %}Assistant:{% endif %}";

export class ChatTemplate {
  private readonly template: Template;
  /** The syntax the model writes tool calls in (tool-formats.ts). */
  readonly toolFamily: ToolFamily;
  /** Whether the template renders tools and calls itself; if not, the default preamble does. */
  readonly nativeTools: boolean;

  /** Whether the template writes a system message's text (probed once, as llama.cpp's caps do). */
  readonly systemRole: boolean;
  private readonly globals: Record<string, unknown>;

  constructor(
    readonly source: string,
    private readonly specials: { bos_token: string; eos_token: string },
    /** The clock strftime_now reads (tests fix it). */
    now?: () => Date,
  ) {
    this.template = new Template(TEMPLATE_PRELUDE + source);
    this.globals = templateGlobals(now);
    ({ family: this.toolFamily, native: this.nativeTools } = detectToolFamily(source));
    this.systemRole = this.probeSystemRole();
  }

  private probeSystemRole(): boolean {
    const probe = 'System probe 7f3a';
    try {
      const messages = [{ role: 'system', content: probe }, { role: 'user', content: 'Hi' }];
      return this.template.render({ ...this.globals, messages, add_generation_prompt: true, ...this.specials }).includes(probe);
    } catch {
      return false;
    }
  }

  /** The prompt for `messages`, offering `tools` (none: a plain conversation). */
  render(messages: ChatMessage[], tools: readonly ToolDefinition[] = []): string {
    if (this.nativeTools) {
      const view = nativeMessages(messages, this.toolFamily === 'mistral' || this.toolFamily === 'mistral-args');
      if (tools.length === 0) return this.renderOrRefuse(view, undefined);
      return this.withTools(() => this.run(view, templateTools(tools)), view);
    }
    if (tools.length === 0) return this.renderOrRefuse(defaultToolMessages(messages, []), undefined);
    // Some templates refuse the system role: then the tool list opens the first user turn.
    return this.withTools(() => {
      try {
        return this.run(defaultToolMessages(messages, tools, !this.systemRole), undefined);
      } catch {
        return this.run(defaultToolMessages(messages, tools, true), undefined);
      }
    }, defaultToolMessages(messages, []));
  }

  private run(messages: TemplateMessage[], tools: unknown[] | undefined): string {
    const context: Record<string, unknown> = { ...this.globals, messages: this.systemRole ? messages : mergeSystem(messages), add_generation_prompt: true, ...this.specials };
    if (tools !== undefined) context.tools = tools;
    return this.template.render(context);
  }

  private renderOrRefuse(messages: TemplateMessage[], tools: unknown[] | undefined): string {
    try {
      return this.run(messages, tools);
    } catch (err) {
      // Templates raise errors for conversations they refuse (e.g. roles out of order).
      throw invalidArgument(`the model's chat template refused the messages: ${(err as Error).message}`, 'messages');
    }
  }

  /** Renders with tools; if the template raises, blames the tools only if it takes the messages without them. */
  private withTools(render: () => string, plain: TemplateMessage[]): string {
    try {
      return render();
    } catch (err) {
      this.renderOrRefuse(plain, undefined);
      throw invalidArgument(`the model's chat template refused the tools: ${(err as Error).message}`, 'tools');
    }
  }
}

/**
 * A leading system message merged into the next message ("system\nuser"), or dropped when it is
 * alone: llama.cpp's workaround for templates without a system role.
 */
function mergeSystem(messages: TemplateMessage[]): TemplateMessage[] {
  const [first, second, ...rest] = messages;
  if (first?.role !== 'system' || typeof first.content !== 'string') return messages;
  if (second === undefined) return [];
  const content = typeof second.content === 'string' ? `${first.content}\n${second.content}` : second.content;
  return [{ ...second, content } as TemplateMessage, ...rest];
}
