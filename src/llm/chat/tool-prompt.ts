// The conversation as a chat template reads it when tools are involved.
//
// A template that renders tools itself (`native`, see detectToolFamily) gets `tools` in the
// OpenAI shape and the messages as Hugging Face's apply_chat_template passes them: an assistant
// call's `arguments` as an object (Llama 3.1 and Qwen 2.5 print it with `tojson`), `role: "tool"`
// results with their `tool_call_id`, and no `tool_calls` key at all on other messages (Llama 3.1
// tests `'tool_calls' in message`). Mistral's templates accept only 9-character alphanumeric
// call ids, so other ids are mapped to one (the same id always to the same one, so a result
// still names its call).
//
// Any other template (DEFAULT_CHAT_TEMPLATE included) gets the default: the tools listed in a
// system message that asks for hermes-style calls, past calls written into the assistant's text
// in that syntax, and results as user turns in <tool_response> tags, so it only ever sees the
// plain roles it knows.
import crypto from 'node:crypto';
import { hermesCallText } from './tool-formats.js';
import type { ToolDefinition } from './tool-params.js';
import type { ChatMessage } from './template.js';

/** A message as the template reads it. */
export type TemplateMessage = Record<string, unknown> & { role: string };

/** Tools in the OpenAI request shape, with only the fields templates print. */
export function templateTools(tools: readonly ToolDefinition[]): Array<Record<string, unknown>> {
  return tools.map((t) => {
    const fn: Record<string, unknown> = { name: t.name };
    if (t.description !== undefined) fn.description = t.description;
    if (t.parameters !== undefined) fn.parameters = t.parameters;
    return { type: 'function', function: fn };
  });
}

const MISTRAL_ID = /^[A-Za-z0-9]{9}$/;

/** A call id as Mistral's templates demand it: 9 letters and digits. */
export function mistralCallId(id: string): string {
  return MISTRAL_ID.test(id) ? id : crypto.createHash('sha256').update(id).digest('hex').slice(0, 9);
}

/** Messages for a template that renders tools itself. */
export function nativeMessages(messages: readonly ChatMessage[], mistralIds: boolean): TemplateMessage[] {
  const id = mistralIds ? mistralCallId : (x: string) => x;
  return messages.map((m) => {
    if (m.role === 'tool') return { role: 'tool', content: m.content, tool_call_id: id(m.tool_call_id) };
    if (m.role === 'assistant' && m.tool_calls) {
      return {
        role: 'assistant',
        content: m.content ?? '',
        tool_calls: m.tool_calls.map((c) => ({ id: id(c.id), type: 'function', function: { name: c.function.name, arguments: JSON.parse(c.function.arguments) as unknown } })),
      };
    }
    return { role: m.role, content: m.content ?? '' };
  });
}

/** The system message text that offers the tools to a template that does not render them. */
export function toolPreamble(tools: readonly ToolDefinition[]): string {
  const listed = templateTools(tools).map((t) => JSON.stringify(t)).join('\n');
  return (
    '# Tools\n\n' +
    'You may call functions to help answer. They are described by these JSON Schemas:\n' +
    `<tools>\n${listed}\n</tools>\n\n` +
    'To call a function, answer with one block per call, and nothing after them:\n' +
    `${hermesCallText('<function-name>', '<arguments-json-object>')}`
  );
}

/**
 * Messages for a template that does not render tools. `preambleInUser`: the tool list goes at
 * the head of the first user message instead of a system message, for templates that refuse
 * the system role.
 */
export function defaultToolMessages(messages: readonly ChatMessage[], tools: readonly ToolDefinition[], preambleInUser = false): TemplateMessage[] {
  const out: TemplateMessage[] = [];
  for (const m of messages) {
    if (m.role === 'tool') {
      const result = `<tool_response>\n${m.content}\n</tool_response>`;
      const last = out[out.length - 1];
      // Consecutive results make one user turn, so that roles still alternate.
      if (last?.role === 'user' && last.toolResults === true) last.content = `${last.content as string}\n${result}`;
      else out.push({ role: 'user', content: result, toolResults: true });
    } else if (m.role === 'assistant' && m.tool_calls) {
      const calls = m.tool_calls.map((c) => hermesCallText(c.function.name, c.function.arguments));
      out.push({ role: 'assistant', content: [m.content ?? '', ...calls].filter((s) => s !== '').join('\n') });
    } else out.push({ role: m.role, content: m.content ?? '' });
  }
  for (const m of out) delete m.toolResults;
  if (tools.length === 0) return out;
  const preamble = toolPreamble(tools);
  if (preambleInUser) {
    const user = out.find((m) => m.role === 'user');
    if (user) user.content = `${preamble}\n\n${user.content as string}`;
    else out.unshift({ role: 'user', content: preamble });
  } else if (out[0]?.role === 'system') out[0].content = `${out[0].content as string}\n\n${preamble}`;
  else out.unshift({ role: 'system', content: preamble });
  return out;
}
