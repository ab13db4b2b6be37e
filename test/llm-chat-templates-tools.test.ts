// Mistral Small 3.2 / Devstral / Magistral write tool calls as [TOOL_CALLS]name[ARGS]{...}
// (Small 3.2's template also writes [CALL_ID]id before [ARGS]), not as Nemo's JSON array: the
// template is told apart by its source, calls are read from whole and streamed text alike, a
// malformed call stays content, and the grammars (eager and lazy) take exactly the valid calls.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { grammarMatches } from '../src/llm/structured/grammar.js';
import { ChatTemplate } from '../src/llm/chat/template.js';
import { parseToolCalls, ToolCallStream, type ChatDelta } from '../src/llm/chat/tool-call-stream.js';
import { detectToolFamily, TOOL_SYNTAXES, type ParsedToolCall } from '../src/llm/chat/tool-formats.js';
import { eagerToolGrammar, LAZY_TRIGGERS, lazyToolGrammar } from '../src/llm/chat/tool-grammar.js';
import { parseTools } from '../src/llm/chat/tool-params.js';

const source = (name: string) => fs.readFileSync(path.join(__dirname, 'data/chat-templates', `${name}.jinja`), 'utf8');
const syntax = TOOL_SYNTAXES['mistral-args'];
const tools = parseTools([
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } } },
  { type: 'function', function: { name: 'ping' } },
]);
const call = (name: string, args: string, id?: string) => `[TOOL_CALLS]${name}${id !== undefined ? `[CALL_ID]${id}` : ''}[ARGS]${args}`;

/** The content and calls a stream of `text` cut into `size`-character pieces assembles to. */
function streamed(text: string, size: number): { content: string; calls: ParsedToolCall[] } {
  const stream = new ToolCallStream(syntax, () => 'call_x');
  const deltas: ChatDelta[] = [];
  for (let i = 0; i < text.length; i += size) deltas.push(...stream.push(text.slice(i, i + size)));
  deltas.push(...stream.finish());
  let content = '';
  const calls: ParsedToolCall[] = [];
  for (const d of deltas) {
    if ('content' in d) content += d.content;
    else {
      const c = d.tool_calls[0];
      if (c.function.name !== undefined) calls.push({ name: c.function.name, arguments: c.function.arguments ?? '' });
      else calls[calls.length - 1] = { ...calls[calls.length - 1]!, arguments: calls[calls.length - 1]!.arguments + (c.function.arguments ?? '') };
    }
  }
  return { content, calls };
}

describe('the mistral-args tool-call family', () => {
  it('is the family of Mistral Small 3.2, while Nemo keeps the JSON array', () => {
    expect(detectToolFamily(source('Mistral-Small-3.2-24B-Instruct-2506'))).toEqual({ family: 'mistral-args', native: true });
    expect(detectToolFamily(source('mistralai-Mistral-Nemo-Instruct-2407'))).toEqual({ family: 'mistral', native: true });
    expect(new ChatTemplate(source('Mistral-Small-3.2-24B-Instruct-2506'), { bos_token: '<s>', eos_token: '</s>' }).toolFamily).toBe('mistral-args');
  });

  const CASES: Array<[string, string | null, ParsedToolCall[]]> = [
    [call('get_weather', '{"city": "Paris"}'), null, [{ name: 'get_weather', arguments: '{"city": "Paris"}' }]],
    [call('get_weather', '{"city": "[ARGS] {x}"}', 'a1B2c3D4e'), null, [{ name: 'get_weather', arguments: '{"city": "[ARGS] {x}"}' }]],
    [`Checking.${call('ping', '{}')}${call('get_weather', '{"city":"Oslo"}')}`, 'Checking.', [{ name: 'ping', arguments: '{}' }, { name: 'get_weather', arguments: '{"city":"Oslo"}' }]],
    ['No call, just [brackets] and [ARGS].', 'No call, just [brackets] and [ARGS].', []],
    // malformed: content, tags and all
    ['[TOOL_CALLS][{"name": "ping", "arguments": {}}]', '[TOOL_CALLS][{"name": "ping", "arguments": {}}]', []],
    ['[TOOL_CALLS]ping[ARGS]"x"', '[TOOL_CALLS]ping[ARGS]"x"', []],
    ['[TOOL_CALLS][ARGS]{}', '[TOOL_CALLS][ARGS]{}', []],
    ['[TOOL_CALLS]ping[CALL_ID][ARG]{}', '[TOOL_CALLS]ping[CALL_ID][ARG]{}', []],
    ['[TOOL_CALLS]ping[ARGS]{"a": 1', '[TOOL_CALLS]ping[ARGS]{"a": 1', []],
  ];

  it('reads calls from the whole text and from every cut of the stream alike', () => {
    for (const [text, content, calls] of CASES) {
      expect(parseToolCalls(syntax, text), text).toEqual({ content, calls });
      for (const size of [1, 2, 3, 7, 1000]) expect(streamed(text, size), `${text} / ${size}`).toEqual({ content: content ?? '', calls });
    }
  });

  it('the eager grammar takes valid calls of the tools, with or without a call id, and nothing else', () => {
    const required = eagerToolGrammar('mistral-args', tools, 'required', true);
    expect(grammarMatches(required, call('get_weather', '{"city": "Paris"}'))).toBe(true);
    expect(grammarMatches(required, call('get_weather', '{"city": "Paris"}', 'a1B2c3D4e'))).toBe(true);
    expect(grammarMatches(required, call('ping', '{}') + call('get_weather', '{"city":"Oslo"}'))).toBe(true);
    expect(grammarMatches(eagerToolGrammar('mistral-args', tools, 'required', false), call('ping', '{}') + call('ping', '{}'))).toBe(false);
    for (const bad of [
      call('get_weather', '{}'),
      call('get_weather', '{"city": 5}'),
      call('get_rain', '{}'),
      call('ping', '{"x": 1}'),
      call('ping', '{}', 'bad-id!'),
      '[TOOL_CALLS][{"name": "ping", "arguments": {}}]',
      `Sure. ${call('ping', '{}')}`,
    ]) expect(grammarMatches(required, bad), bad).toBe(false);
    expect(grammarMatches(eagerToolGrammar('mistral-args', tools, { name: 'ping' }, false), call('get_weather', '{"city": "Paris"}'))).toBe(false);
  });

  it('the lazy grammar takes what follows [TOOL_CALLS] in valid calls', () => {
    const { trigger, grammar } = lazyToolGrammar('mistral-args', tools, true);
    expect(trigger).toBe('[TOOL_CALLS]');
    expect(LAZY_TRIGGERS['mistral-args']).toBe(trigger);
    const after = (text: string) => text.slice(text.indexOf(trigger) + trigger.length);
    expect(grammarMatches(grammar, after(call('get_weather', '{"city": "Paris"}')))).toBe(true);
    expect(grammarMatches(grammar, after(call('ping', '{}', 'abc123XYZ') + call('ping', '{}')))).toBe(true);
    expect(grammarMatches(grammar, after(call('get_weather', '{"town": "Paris"}')))).toBe(false);
    expect(grammarMatches(grammar, '[{"name": "ping", "arguments": {}}]')).toBe(false);
    expect(grammarMatches(lazyToolGrammar('mistral-args', tools, false).grammar, after(call('ping', '{}') + call('ping', '{}')))).toBe(false);
  });
});
