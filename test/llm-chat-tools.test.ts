// Tool calling in the chat service, without a model: the real chat templates of Llama 3.1, Qwen
// 2.5 and Mistral Nemo (test/data/chat-templates/) render tools, a call and its result; the family
// is detected from the template; each family's output is read back into content and calls, whole
// and streamed at every split, and the stream's chunks are assembled by the openai SDK itself;
// the eager and lazy grammars take the family's calls with valid arguments only; and every bad
// tools / tool_choice / tool message is a 400 naming its field.
import { buildGrammar } from '../src/llm/chat/grammar-job.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import { chatMessages } from '../src/llm/chat/params.js';
import { type ChatMessage, ChatTemplate, DEFAULT_CHAT_TEMPLATE } from '../src/llm/chat/template.js';
import { type ChatDelta, parseToolCalls, ToolCallStream } from '../src/llm/chat/tool-call-stream.js';
import { detectToolFamily, type ParsedToolCall, TOOL_SYNTAXES, type ToolFamily } from '../src/llm/chat/tool-formats.js';
import { eagerToolGrammar, lazyToolGrammar } from '../src/llm/chat/tool-grammar.js';
import { parseParallelToolCalls, parseToolChoice, parseTools, type ToolDefinition } from '../src/llm/chat/tool-params.js';
import { mistralCallId } from '../src/llm/chat/tool-prompt.js';
import { grammarMatches } from '../src/llm/structured/grammar.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const templateSource = (name: string) => readFileSync(path.join(here, 'data/chat-templates', `${name}.jinja`), 'utf8');

const TEMPLATES = {
  llama3: new ChatTemplate(templateSource('meta-llama-Llama-3.1-8B-Instruct'), { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>' }),
  hermes: new ChatTemplate(templateSource('Qwen-Qwen2.5-7B-Instruct'), { bos_token: '', eos_token: '<|im_end|>' }),
  mistral: new ChatTemplate(templateSource('mistralai-Mistral-Nemo-Instruct-2407'), { bos_token: '<s>', eos_token: '</s>' }),
};
const FAMILIES = ['llama3', 'hermes', 'mistral'] as const;

/** The 400 a call earns (failing the test if it is accepted). */
function refusal(check: () => unknown): { message: string; param: string | null } {
  try {
    check();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).code).toBe('invalid_argument');
    return { message: (e as ApiError).message, param: (e as ApiError).param };
  }
  throw new Error('the input was accepted');
}

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather now in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { enum: ['c', 'f'] } }, required: ['city'], additionalProperties: false },
  },
};
const TIME = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'integer' } }, required: ['zone'] } } };
const PING = { type: 'function', function: { name: 'ping' } };
const tools: ToolDefinition[] = parseTools([WEATHER, TIME, PING]);

const CALL_ID = 'call_0123456789abcdef01234567';
const conversation: ChatMessage[] = chatMessages([
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: null, tool_calls: [{ id: CALL_ID, type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
  { role: 'tool', tool_call_id: CALL_ID, content: '{"temp": 21}' },
]);

describe('chat templates with tools', () => {
  it('the family comes from the template source', () => {
    expect(TEMPLATES.llama3).toMatchObject({ toolFamily: 'llama3', nativeTools: true });
    expect(TEMPLATES.hermes).toMatchObject({ toolFamily: 'hermes', nativeTools: true });
    expect(TEMPLATES.mistral).toMatchObject({ toolFamily: 'mistral', nativeTools: true });
    expect(new ChatTemplate(DEFAULT_CHAT_TEMPLATE, { bos_token: '', eos_token: '' })).toMatchObject({ toolFamily: 'hermes', nativeTools: false });
    // Llama 3.2's template has no <|python_tag|>, but declares the ipython environment.
    expect(detectToolFamily('{% if tools %}Environment: ipython{% endif %}')).toEqual({ family: 'llama3', native: true });
    // Tools in an unknown syntax: the template renders them, calls are read as Hermes ones.
    expect(detectToolFamily('{% for t in tools %}<function>{{ t }}</function>{% endfor %}')).toEqual({ family: 'hermes', native: true });
  });

  it('Llama 3.1 renders the tools, the call and the result', () => {
    const text = TEMPLATES.llama3.render(conversation, tools);
    expect(text).toContain('Environment: ipython\n');
    expect(text).toContain(JSON.stringify(WEATHER, null, 4));
    expect(text).toContain('<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>');
    // The template prints a string result with tojson (a string is iterable to Jinja).
    expect(text).toContain('<|start_header_id|>ipython<|end_header_id|>\n\n"{\\"temp\\": 21}"<|eot_id|>');
    expect(text.endsWith('<|start_header_id|>assistant<|end_header_id|>\n\n')).toBe(true);
  });

  it('Qwen 2.5 renders the tools, the call and the result', () => {
    const text = TEMPLATES.hermes.render(conversation, tools);
    expect(text).toContain('<|im_start|>system\nBe brief.\n\n# Tools');
    expect(text).toContain('<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "The weather now in a city", "parameters": {');
    expect(text).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>');
    expect(text).toContain('<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>');
  });

  it('Mistral Nemo renders the tools, the call and the result, with 9-character ids', () => {
    const text = TEMPLATES.mistral.render(conversation, tools);
    const id = mistralCallId(CALL_ID);
    expect(id).toMatch(/^[a-zA-Z0-9]{9}$/);
    expect(mistralCallId('abc123XYZ')).toBe('abc123XYZ');
    expect(text).toContain('[AVAILABLE_TOOLS][{"type": "function", "function": {"name": "get_weather", "description": "The weather now in a city", "parameters": {');
    expect(text).toContain(`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "${id}"}]</s>`);
    expect(text).toContain(`[TOOL_RESULTS]{"content": {"temp": 21}, "call_id": "${id}"}[/TOOL_RESULTS]`);
  });

  it('without tools, the same conversation renders, and plain messages are unchanged', () => {
    for (const family of FAMILIES) {
      const text = TEMPLATES[family].render(conversation);
      expect(text).not.toContain('get_time');
      expect(text).toContain('Paris');
    }
    const plain = chatMessages([{ role: 'user', content: 'Hi' }]);
    expect(TEMPLATES.hermes.render(plain)).toBe('<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
  });

  it('a template without tools gets the preamble, and calls and results in hermes syntax', () => {
    const text = new ChatTemplate(DEFAULT_CHAT_TEMPLATE, { bos_token: '', eos_token: '' }).render(conversation, tools);
    expect(text.startsWith('Be brief.\n\n# Tools\n')).toBe(true);
    expect(text).toContain(`<tools>\n${JSON.stringify(WEATHER)}\n${JSON.stringify(TIME)}\n${JSON.stringify(PING)}\n</tools>`);
    expect(text).toContain('<tool_call>\n{"name": "<function-name>", "arguments": <arguments-json-object>}\n</tool_call>');
    expect(text).toContain('Assistant: <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n');
    expect(text).toContain('User: <tool_response>\n{"temp": 21}\n</tool_response>\n');
    expect(text.endsWith('Assistant:')).toBe(true);
  });

  it('a template that refuses the system role gets the tool list in the first user turn', () => {
    const strict = new ChatTemplate(
      "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}<{{ m.role }}>{{ m.content }}{% endfor %}",
      { bos_token: '', eos_token: '' },
    );
    const text = strict.render(chatMessages([{ role: 'user', content: 'Hi' }]), tools);
    expect(text.startsWith('<user># Tools\n')).toBe(true);
    expect(text.endsWith('</tool_call>\n\nHi')).toBe(true);
  });

  it('a template that raises on the tools is a 400 naming tools; one that raises on the messages names messages', () => {
    const picky = new ChatTemplate("{% if tools %}{{ raise_exception('no tools here') }}{% endif %}{% for m in messages %}<tool_call>{{ m.content }}{% endfor %}", { bos_token: '', eos_token: '' });
    expect(refusal(() => picky.render(conversation, tools))).toEqual({ message: "the model's chat template refused the tools: no tools here", param: 'tools' });
    // Llama 3.1 renders one call per message only.
    const two = chatMessages([
      { role: 'user', content: 'Both?' },
      {
        role: 'assistant',
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'get_time', arguments: '{"zone": 1}' } },
          { id: 'b', type: 'function', function: { name: 'get_time', arguments: '{"zone": 2}' } },
        ],
      },
    ]);
    expect(refusal(() => TEMPLATES.llama3.render(two, tools))).toEqual({
      message: "the model's chat template refused the messages: This model only supports single tool-calls at once!",
      param: 'messages',
    });
    // Qwen takes them.
    expect(TEMPLATES.hermes.render(two, tools)).toContain('{"zone": 1}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"zone": 2}}');
  });
});

/** A family's text for calls, as its model writes it. */
function written(family: ToolFamily, calls: ParsedToolCall[]): string {
  if (family === 'hermes') return calls.map((c) => `<tool_call>\n{"name": "${c.name}", "arguments": ${c.arguments}}\n</tool_call>`).join('\n');
  if (family === 'mistral') return `[TOOL_CALLS][${calls.map((c) => `{"name": "${c.name}", "arguments": ${c.arguments}}`).join(', ')}]`;
  return calls.map((c) => `{"name": "${c.name}", "parameters": ${c.arguments}}`).join('\n');
}

const ONE: ParsedToolCall[] = [{ name: 'get_weather', arguments: '{"city": "Paris {Île-de-France} </tool_call> [TOOL_CALLS]", "unit": "c"}' }];
const TWO: ParsedToolCall[] = [
  { name: 'get_time', arguments: '{"zone": -150}' },
  { name: 'ping', arguments: '{}' },
];

/** [family, text, expected content, expected calls] */
const OUTPUTS: Array<[ToolFamily, string, string | null, ParsedToolCall[]]> = [];
for (const family of FAMILIES) {
  OUTPUTS.push(
    [family, written(family, ONE), null, ONE],
    [family, `Let me check.\n\n${written(family, ONE)}\n`, 'Let me check.', ONE],
    [family, 'No call here, just {braces}, [brackets] and <tags>.', 'No call here, just {braces}, [brackets] and <tags>.', []],
    [family, '', '', []],
  );
  if (family !== 'llama3') OUTPUTS.push([family, written(family, TWO), null, TWO]);
}
// llama3: after <|python_tag|>; two objects in a row still read as two calls.
OUTPUTS.push(['llama3', `<|python_tag|>${written('llama3', ONE)}`, null, ONE], ['llama3', written('llama3', TWO), null, TWO]);
// hermes: text between and after calls is content; a call may put "parameters" for "arguments".
OUTPUTS.push(
  ['hermes', `A ${written('hermes', [TWO[0]!])} B ${written('hermes', [TWO[1]!])}  C`, 'A B  C', TWO],
  ['hermes', '<tool_call>{"arguments": {}, "name": "ping"}</tool_call>', null, [{ name: 'ping', arguments: '{}' }]],
  ['hermes', '<tool_call>{"name": "f", "arguments": {"n": -1.5e+2, "s": "\\"}\\u00e9", "a": [true, false, null, {}]}}</tool_call>', null, [{ name: 'f', arguments: '{"n": -1.5e+2, "s": "\\"}\\u00e9", "a": [true, false, null, {}]}' }]],
);
// Malformed calls are content, tags and all.
const MALFORMED: Array<[ToolFamily, string]> = [
  ['hermes', '<tool_call>\n{"name": "get_time", "arguments": {"zone": 1,}}\n</tool_call>'],
  ['hermes', '<tool_call>\n{"name": "get_time", "arguments": "zone=1"}\n</tool_call>'],
  ['hermes', '<tool_call>\n{"name": "get_time", "arguments": {"zone": 1}}\n</tool_cal'],
  ['hermes', '<tool_call>\n{"name": "get_time"}\n</tool_call>'],
  ['hermes', '<tool_call>\n{"name": "get_time", "arguments": {"zone": 1}}'],
  ['mistral', '[TOOL_CALLS][{"name": "ping", "arguments": {}}, {"name": 7, "arguments": {}}]'],
  ['mistral', '[TOOL_CALLS]{"name": "ping", "arguments": {}}'],
  ['mistral', '[TOOL_CALLS][{"name": "ping", "arguments": {}}'],
  ['llama3', '{"name": "Bob", "age": 7}'],
  ['llama3', '{"name": "ping", "parameters": {"a": tru}}'],
  ['llama3', '<|python_tag|>brave_search.call(query="x")'],
];
for (const [family, text] of MALFORMED) OUTPUTS.push([family, text, text, []]);

/** Deltas as the openai SDK's ChatCompletionStream assembles them: content and tool_calls. */
async function sdkAssembled(deltas: ChatDelta[]): Promise<{ content: string | null; calls: ParsedToolCall[] }> {
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm' };
  const calls = deltas.some((d) => 'tool_calls' in d);
  const chunks = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] },
    ...deltas.map((delta) => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: null }] })),
    { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: calls ? 'tool_calls' : 'stop' }] },
  ];
  const bytes = new TextEncoder().encode(chunks.map((c) => `${JSON.stringify(c)}\n`).join(''));
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
  const completion = await ChatCompletionStream.fromReadableStream(readable).finalChatCompletion();
  const message = completion.choices[0]!.message;
  const toolCalls = (message.tool_calls ?? []).map((c) => {
    expect(c.type).toBe('function');
    expect(c.id).toMatch(/^call_[0-9a-f]{24}$/);
    const fn = (c as { function: { name: string; arguments: string } }).function;
    return { name: fn.name, arguments: fn.arguments };
  });
  const content = message.content ?? '';
  return { content: content === '' && toolCalls.length > 0 ? null : content, calls: toolCalls };
}

/** Every delta has exactly the OpenAI shape: content alone, or one tool call opening or continuing. */
function checkShapes(deltas: ChatDelta[]): void {
  let opened = -1;
  for (const d of deltas) {
    if ('content' in d) {
      expect(Object.keys(d)).toEqual(['content']);
      expect(d.content).not.toBe('');
      continue;
    }
    expect(Object.keys(d)).toEqual(['tool_calls']);
    expect(d.tool_calls).toHaveLength(1);
    const call = d.tool_calls[0];
    if (call.id !== undefined) {
      expect(call.index).toBe(++opened);
      expect(call).toEqual({ index: opened, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } });
    } else {
      expect(call.index).toBe(opened);
      expect(Object.keys(call)).toEqual(['index', 'function']);
      expect(Object.keys(call.function)).toEqual(['arguments']);
    }
  }
}

function streamed(family: ToolFamily, pieces: string[]): ChatDelta[] {
  const stream = new ToolCallStream(TOOL_SYNTAXES[family]);
  return [...pieces.flatMap((p) => stream.push(p)), ...stream.finish()];
}

describe('reading calls out of the text', () => {
  it.each(OUTPUTS)('%s: %j', (family, text, content, calls) => {
    expect(parseToolCalls(TOOL_SYNTAXES[family], text)).toEqual({ content, calls });
  });

  it.each(OUTPUTS)('%s streamed at every split and character by character: %j', async (family, text, content, calls) => {
    const chars = [...text];
    const splits: string[][] = [chars];
    for (let i = 0; i <= chars.length; i++) splits.push([chars.slice(0, i).join(''), chars.slice(i).join('')]);
    for (let i = 0; i + 3 <= chars.length; i += 3) splits.push([chars.slice(0, i).join(''), chars.slice(i, i + 3).join(''), chars.slice(i + 3).join('')]);
    for (const pieces of splits) {
      const deltas = streamed(family, pieces);
      checkShapes(deltas);
      expect(await sdkAssembled(deltas), JSON.stringify(pieces)).toEqual({ content, calls });
    }
  });

  it('a call is announced only when its block is complete; text that may open one is held back', () => {
    const stream = new ToolCallStream(TOOL_SYNTAXES.hermes, () => 'call_x');
    expect(stream.push('Sure.\n<tool')).toEqual([{ content: 'Sure.' }]);
    expect(stream.push('_call>\n{"name": "ping", "arguments": {')).toEqual([]);
    expect(stream.push('}}\n</tool_call>')).toEqual([
      { tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { name: 'ping', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{}' } }] },
    ]);
    expect(stream.push('\n\n')).toEqual([]);
    expect(stream.finish()).toEqual([]);
    // Not a tag after all: released as soon as it differs.
    const other = new ToolCallStream(TOOL_SYNTAXES.hermes);
    expect(other.push('a <tool')).toEqual([{ content: 'a' }]);
    expect(other.push('box>')).toEqual([{ content: ' <toolbox>' }]);
  });
});

/** Arguments for each tool: valid ones, and invalid ones the grammar must refuse. */
const VALID_ARGS: Record<string, string[]> = {
  get_weather: ['{"city": "Paris"}', '{"city":"Oslo","unit":"f"}'],
  get_time: ['{"zone": 2}'],
  ping: ['{}'],
};
const INVALID_ARGS: Record<string, string[]> = {
  get_weather: ['{}', '{"city": 5}', '{"city": "Paris", "unit": "k"}', '{"city": "Paris", "wind": 1}'],
  get_time: ['{"zone": "two"}', '{"zone": 1.5}', '{}'],
  ping: ['{"x": 1}'],
};

describe('tool grammars', () => {
  for (const family of FAMILIES) {
    it(`${family}: the eager grammar takes calls of the tools with valid arguments only`, () => {
      const required = eagerToolGrammar(family, tools, 'required', false);
      for (const [name, list] of Object.entries(VALID_ARGS)) {
        for (const args of list) expect(grammarMatches(required, written(family, [{ name, arguments: args }])), `${name} ${args}`).toBe(true);
      }
      for (const [name, list] of Object.entries(INVALID_ARGS)) {
        for (const args of list) expect(grammarMatches(required, written(family, [{ name, arguments: args }])), `${name} ${args}`).toBe(false);
      }
      // The arguments of one tool under the name of another, an unknown name, text around the call.
      expect(grammarMatches(required, written(family, [{ name: 'get_time', arguments: '{"city": "Paris"}' }]))).toBe(false);
      expect(grammarMatches(required, written(family, [{ name: 'get_rain', arguments: '{}' }]))).toBe(false);
      expect(grammarMatches(required, `Sure. ${written(family, [{ name: 'ping', arguments: '{}' }])}`)).toBe(false);
      // A named tool: only that one.
      const named = eagerToolGrammar(family, tools, { name: 'get_time' }, true);
      expect(grammarMatches(named, written(family, [{ name: 'get_time', arguments: '{"zone": 3}' }]))).toBe(true);
      expect(grammarMatches(named, written(family, [{ name: 'ping', arguments: '{}' }]))).toBe(false);
      // Parallel calls: several with parallel (llama3: one per message regardless), one without.
      const two = written(family, TWO);
      expect(grammarMatches(eagerToolGrammar(family, tools, 'required', true), two)).toBe(family !== 'llama3');
      expect(grammarMatches(required, two)).toBe(false);
    });

    it(`${family}: the lazy grammar takes what follows the trigger in a valid call`, () => {
      const { trigger, grammar } = lazyToolGrammar(family, tools, true);
      const after = (text: string) => {
        const at = text.indexOf(trigger);
        expect(at).toBeGreaterThanOrEqual(0);
        return text.slice(at + trigger.length);
      };
      for (const [name, list] of Object.entries(VALID_ARGS)) {
        for (const args of list) expect(grammarMatches(grammar, after(written(family, [{ name, arguments: args }]))), `${name} ${args}`).toBe(true);
      }
      for (const [name, list] of Object.entries(INVALID_ARGS)) {
        for (const args of list) expect(grammarMatches(grammar, after(written(family, [{ name, arguments: args }]))), `${name} ${args}`).toBe(false);
      }
      expect(grammarMatches(grammar, after(written(family, [{ name: 'get_rain', arguments: '{}' }])))).toBe(false);
      if (family !== 'llama3') {
        expect(grammarMatches(grammar, after(written(family, TWO)))).toBe(true);
        expect(grammarMatches(lazyToolGrammar(family, tools, false).grammar, after(written(family, TWO)))).toBe(false);
      }
      // The trigger is where the family's output first commits to a call.
      expect(trigger).toBe({ llama3: '{"name"', hermes: '<tool_call>', mistral: '[TOOL_CALLS]' }[family]);
    });
  }
});

describe('refusals of tools, tool_choice and tool messages', () => {
  it('tools: each bad field is a 400 naming it', () => {
    const fn = (f: Record<string, unknown>) => [{ type: 'function', function: { name: 'f', ...f } }];
    const cases: Array<[unknown, string]> = [
      [{}, 'tools'],
      ['f', 'tools'],
      [[null], 'tools[0]'],
      [[{ type: 'code_interpreter' }], 'tools[0].type'],
      [[{ type: 'function' }], 'tools[0].function'],
      [[{ type: 'function', function: 'f' }], 'tools[0].function'],
      [fn({ name: '' }), 'tools[0].function.name'],
      [fn({ name: 'has space' }), 'tools[0].function.name'],
      [fn({ name: 'x'.repeat(65) }), 'tools[0].function.name'],
      [[WEATHER, { type: 'function', function: { name: 'get_weather' } }], 'tools[1].function.name'],
      [fn({ description: 7 }), 'tools[0].function.description'],
      [fn({ parameters: 'object' }), 'tools[0].function.parameters'],
      [fn({ parameters: [] }), 'tools[0].function.parameters'],
      [fn({ parameters: { type: 'string' } }), 'tools[0].function.parameters'],
    ];
    for (const [raw, param] of cases) expect(refusal(() => parseTools(raw)).param, JSON.stringify(raw)).toBe(param);
    // A schema that does not compile is found when the grammar is built (off the event loop),
    // naming the tool by its index.
    const unbuildable: Array<[unknown, number]> = [
      [fn({ parameters: { type: 'object', properties: { a: { type: 'no-such-type' } } } }), 0],
      [fn({ parameters: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } } }), 0],
      [[WEATHER, TIME, fn({ name: 'g', parameters: { type: 'object', properties: { a: { minimum: 'zero' } } } })[0]], 2],
    ];
    for (const [raw, index] of unbuildable) {
      const parsed = parseTools(raw);
      let failure: { message: string; tool?: number } | null = null;
      try {
        buildGrammar({ kind: 'tools', family: 'hermes', tools: parsed, choice: 'required', parallel: false });
      } catch (err) {
        failure = err as { message: string; tool?: number };
      }
      expect(failure?.tool, JSON.stringify(raw)).toBe(index);
      expect(failure?.message.length).toBeGreaterThan(0);
    }
    expect(parseTools(undefined)).toEqual([]);
    expect(parseTools(null)).toEqual([]);
    expect(parseTools([])).toEqual([]);
    expect(parseTools([PING, WEATHER])).toEqual([{ name: 'ping' }, WEATHER.function]);
  });

  it('tool_choice and parallel_tool_calls', () => {
    expect(parseToolChoice(undefined, tools)).toBe('auto');
    expect(parseToolChoice(undefined, [])).toBe('none');
    expect(parseToolChoice(null, tools)).toBe('auto');
    for (const c of ['none', 'auto', 'required'] as const) expect(parseToolChoice(c, tools)).toBe(c);
    expect(parseToolChoice({ type: 'function', function: { name: 'ping' } }, tools)).toEqual({ name: 'ping' });
    const cases: Array<[unknown, readonly ToolDefinition[], string, string]> = [
      [{ type: 'function', function: { name: 'nope' } }, tools, 'tool_choice names "nope", which is not one of the tools', 'tool_choice'],
      ['always', tools, 'tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}, got "always"', 'tool_choice'],
      [{ type: 'tool', function: { name: 'ping' } }, tools, 'tool_choice.type must be "function", got "tool"', 'tool_choice.type'],
      [{ type: 'function' }, tools, 'tool_choice.function.name must be a string', 'tool_choice.function.name'],
      [{ type: 'function', function: { name: 3 } }, tools, 'tool_choice.function.name must be a string', 'tool_choice.function.name'],
      ['required', [], 'tool_choice "required" needs at least one tool in tools', 'tool_choice'],
    ];
    for (const [raw, list, message, param] of cases) expect(refusal(() => parseToolChoice(raw, list)), JSON.stringify(raw)).toEqual({ message, param });
    expect(parseParallelToolCalls(undefined)).toBe(true);
    expect(parseParallelToolCalls(false)).toBe(false);
    expect(parseParallelToolCalls('false')).toBe(false);
    expect(refusal(() => parseParallelToolCalls(0))).toEqual({ message: 'parallel_tool_calls must be true or false', param: 'parallel_tool_calls' });
  });

  it('tool calls and tool results in messages', () => {
    const call = { id: 'call_1', type: 'function', function: { name: 'ping', arguments: '{}' } };
    expect(
      chatMessages([
        { role: 'user', content: 'go' },
        { role: 'assistant', tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'pong' }] },
        { role: 'assistant', content: 'done', tool_calls: [] },
        { role: 'assistant', content: 'thinking', tool_calls: [call] },
      ]),
    ).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'call_1', content: 'pong' },
      { role: 'assistant', content: 'done' },
      { role: 'assistant', content: 'thinking', tool_calls: [call] },
    ]);
    const withCall = (c: unknown) => [{ role: 'user', content: 'go' }, { role: 'assistant', content: null, tool_calls: [c] }];
    const fnCall = (f: Record<string, unknown>) => withCall({ id: 'c', type: 'function', function: { name: 'ping', arguments: '{}', ...f } });
    const cases: Array<[unknown, string]> = [
      [[{ role: 'tool', content: 'x' }], 'messages[0].tool_call_id'],
      [[{ role: 'tool', content: 'x', tool_call_id: 7 }], 'messages[0].tool_call_id'],
      [[{ role: 'tool', tool_call_id: 'c' }], 'messages[0].content'],
      [[{ role: 'function', content: 'x' }], 'messages[0].role'],
      [[{ role: 'assistant', content: null }], 'messages[0].content'],
      [[{ role: 'assistant', tool_calls: {} }], 'messages[0].tool_calls'],
      [withCall('c'), 'messages[1].tool_calls[0]'],
      [withCall({ type: 'function', function: { name: 'ping', arguments: '{}' } }), 'messages[1].tool_calls[0].id'],
      [withCall({ id: 'c', type: 'custom', function: { name: 'ping', arguments: '{}' } }), 'messages[1].tool_calls[0].type'],
      [withCall({ id: 'c', type: 'function' }), 'messages[1].tool_calls[0].function'],
      [fnCall({ name: undefined }), 'messages[1].tool_calls[0].function.name'],
      [fnCall({ arguments: { a: 1 } }), 'messages[1].tool_calls[0].function.arguments'],
      [fnCall({ arguments: '{"a": ' }), 'messages[1].tool_calls[0].function.arguments'],
      [fnCall({ arguments: '[1]' }), 'messages[1].tool_calls[0].function.arguments'],
      [[{ role: 'assistant', content: 5, tool_calls: [{ id: 'c', type: 'function', function: { name: 'ping', arguments: '{}' } }] }], 'messages[0].content'],
    ];
    for (const [raw, param] of cases) expect(refusal(() => chatMessages(raw)).param, JSON.stringify(raw)).toBe(param);
  });
});
