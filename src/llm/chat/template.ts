// Chat prompts: the model's own `tokenizer.chat_template` (Jinja) rendered with
// @huggingface/jinja, or, for a model without one, DEFAULT_CHAT_TEMPLATE below (documented in
// the README): plain "User:" / "Assistant:" turns that base models continue sensibly.
import { Template } from '@huggingface/jinja';
import { invalidArgument } from '../../errors.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export const DEFAULT_CHAT_TEMPLATE =
  "{% for message in messages %}" +
  "{% if message.role == 'system' %}{{ message.content }}\n\n" +
  "{% elif message.role == 'user' %}User: {{ message.content }}\n" +
  "{% else %}Assistant: {{ message.content }}\n{% endif %}" +
  "{% endfor %}" +
  "{% if add_generation_prompt %}Assistant:{% endif %}";

export class ChatTemplate {
  private readonly template: Template;

  constructor(
    readonly source: string,
    private readonly specials: { bos_token: string; eos_token: string },
  ) {
    this.template = new Template(source);
  }

  render(messages: ChatMessage[]): string {
    try {
      return this.template.render({ messages, add_generation_prompt: true, ...this.specials });
    } catch (err) {
      // Templates raise errors for conversations they refuse (e.g. roles out of order).
      throw invalidArgument(`the model's chat template refused the messages: ${(err as Error).message}`, 'messages');
    }
  }
}
