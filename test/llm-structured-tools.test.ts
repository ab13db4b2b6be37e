// Tool calling through the real host, on random-weight models carrying the real chat templates of
// Llama 3.1, Qwen 2.5 and Mistral Nemo in their GGUF metadata (and one without a template, which
// gets the documented default): with tool_choice "required" or a named tool every answer is a
// call whose arguments validate against the tool's schema, whole or streamed (the stream's
// delta.tool_calls assemble to the whole answer's tool_calls); the conversation goes on with the
// call and its result; "auto" and "none" answer; every bad tools request is a 400 naming its field.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schemaValidator } from './helpers/ajv.js';
import type { TestHost } from './helpers/in-process-host.js';
import { libraryHost } from './helpers/library.js';
import { writeTinyChatModel } from './helpers/llm-models.js';

const template = (name: string) => fs.readFileSync(path.join(__dirname, 'data/chat-templates', name), 'utf8');
const FAMILIES = [
  { id: 'llama31', template: template('meta-llama-Llama-3.1-8B-Instruct.jinja'), parallel: false },
  { id: 'qwen25', template: template('Qwen-Qwen2.5-7B-Instruct.jinja'), parallel: true },
  { id: 'mistral', template: template('mistralai-Mistral-Nemo-Instruct-2407.jinja'), parallel: true },
  { id: 'plain', template: undefined, parallel: true },
] as const;

let host: TestHost;
let token: string;

beforeAll(async () => {
  ({ host, token } = await libraryHost(
    (dir) => ({
      ...Object.fromEntries(FAMILIES.map((f) => [f.id, writeTinyChatModel(dir, f.id, { nCtx: 4096, ...(f.template ? { chatTemplate: f.template } : {}) })])),
      // Qwen 2.5's template with <tool_call> and </tool_call> as single user-defined tokens, as in
      // Qwen's own vocabulary: a random model then opens a call by itself now and then.
      'qwen-tags': writeTinyChatModel(dir, 'qwen-tags', { nCtx: 4096, chatTemplate: FAMILIES[1].template, addedTokens: ['<tool_call>', '</tool_call>'] }),
      'refuses-tools': writeTinyChatModel(dir, 'refuses-tools', {
        chatTemplate: "{% if tools %}{{ raise_exception('this template takes no tools') }}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}",
      }),
    }),
    { LLM_CONTEXT_LENGTH: '4096', LLM_MAX_RUNNING_SEQUENCES: '8' },
  ));
}, 120_000);
afterAll(async () => {
  await host?.close();
});

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', minLength: 1, maxLength: 20 }, days: { type: 'integer', minimum: 1, maximum: 7 }, unit: { enum: ['celsius', 'fahrenheit'] } },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'book_table',
      description: 'Books a table',
      parameters: {
        type: 'object',
        properties: { when: { type: 'string', format: 'date' }, people: { type: 'integer', minimum: 1, maximum: 12 }, notes: { anyOf: [{ type: 'null' }, { type: 'string', maxLength: 16 }] } },
        required: ['when', 'people'],
        additionalProperties: false,
      },
    },
  },
];

interface ToolCall {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}
interface ChatAnswer {
  choices: Array<{ message: { role: string; content: string | null; tool_calls?: ToolCall[] }; finish_reason: string }>;
}

const post = (model: string, body: Record<string, unknown>) =>
  fetch(`${host.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'What is the weather in Oslo?' }], tools: TOOLS, max_tokens: 2000, ...body }),
  });

async function whole(model: string, body: Record<string, unknown>): Promise<ChatAnswer> {
  const res = await post(model, body);
  const json = (await res.json()) as ChatAnswer;
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json;
}

/** A streamed answer assembled the way the openai SDK does it: content joined, tool calls by index. */
async function streamed(model: string, body: Record<string, unknown>): Promise<{ content: string; calls: ToolCall[]; finish: string | null }> {
  const res = await post(model, { ...body, stream: true });
  expect(res.status).toBe(200);
  let content = '';
  let finish: string | null = null;
  const calls: ToolCall[] = [];
  for (const event of (await res.text()).split('\n\n')) {
    if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
    const chunk = JSON.parse(event.slice(6)) as { choices: Array<{ delta: { content?: string; tool_calls?: Array<{ index: number; id?: string; type?: string; function: { name?: string; arguments?: string } }> }; finish_reason: string | null }> };
    for (const c of chunk.choices) {
      content += c.delta.content ?? '';
      for (const d of c.delta.tool_calls ?? []) {
        if (d.id !== undefined) {
          expect(d.index).toBe(calls.length);
          expect(d.type).toBe('function');
          calls.push({ id: d.id, type: 'function', function: { name: d.function.name!, arguments: d.function.arguments ?? '' } });
        } else calls[d.index]!.function.arguments += d.function.arguments ?? '';
      }
      finish = c.finish_reason ?? finish;
    }
  }
  return { content, calls, finish };
}

const validators = (() => {
  const ajv = schemaValidator();
  return Object.fromEntries(TOOLS.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
})();

function expectValidCall(call: ToolCall, names = ['get_weather', 'book_table']): void {
  expect(call.type).toBe('function');
  expect(call.id).toMatch(/^call_[0-9a-f]{24}$/);
  expect(names).toContain(call.function.name);
  const validate = validators[call.function.name]!;
  const args = JSON.parse(call.function.arguments) as unknown;
  expect(validate(args), `${call.function.arguments}: ${JSON.stringify(validate.errors)}`).toBe(true);
}

describe.each(FAMILIES)('tools on the $id template', (family) => {
  it('tool_choice "required": every answer at temperature 1 is a call whose arguments validate', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, (_, seed) => whole(family.id, { tool_choice: 'required', temperature: 1, seed, parallel_tool_calls: seed % 2 === 0 })));
    let several = 0;
    for (const [seed, a] of answers.entries()) {
      const choice = a.choices[0]!;
      expect(choice.finish_reason, `seed ${seed}`).toBe('tool_calls');
      expect(choice.message.tool_calls!.length).toBeGreaterThanOrEqual(1);
      if (seed % 2 === 1 || !family.parallel) expect(choice.message.tool_calls).toHaveLength(1);
      if (choice.message.tool_calls!.length > 1) several++;
      expect(choice.message.tool_calls!.length).toBeLessThanOrEqual(8); // MAX_PARALLEL_CALLS
      for (const call of choice.message.tool_calls!) expectValidCall(call);
      expect(new Set(choice.message.tool_calls!.map((c) => c.id)).size).toBe(choice.message.tool_calls!.length);
    }
    if (family.parallel) expect(several).toBeGreaterThan(0);
  });

  it('a named tool is the one called', async () => {
    for (let seed = 0; seed < 4; seed++) {
      const a = await whole(family.id, { tool_choice: { type: 'function', function: { name: 'book_table' } }, temperature: 1, seed });
      const calls = a.choices[0]!.message.tool_calls!;
      expect(calls.length).toBeGreaterThanOrEqual(1);
      for (const call of calls) expectValidCall(call, ['book_table']);
    }
  });

  it('a streamed call assembles to the whole answer, name first and then its arguments', async () => {
    for (let seed = 0; seed < 3; seed++) {
      const body = { tool_choice: 'required', temperature: 1, seed, parallel_tool_calls: false };
      const w = (await whole(family.id, body)).choices[0]!;
      const s = await streamed(family.id, body);
      expect(s.finish).toBe('tool_calls');
      expect(s.calls.map((c) => c.function)).toEqual(w.message.tool_calls!.map((c) => c.function));
      expect(s.content).toBe(w.message.content ?? '');
      for (const call of s.calls) expectValidCall(call);
    }
  });

  it('the conversation goes on with the call and its result, and "auto" and "none" answer', async () => {
    const first = (await whole(family.id, { tool_choice: 'required', temperature: 1, seed: 5, parallel_tool_calls: false })).choices[0]!.message;
    const call = first.tool_calls![0]!;
    const messages = [
      { role: 'user', content: 'What is the weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: first.tool_calls },
      { role: 'tool', tool_call_id: call.id, content: '{"temperature": 3}' },
    ];
    for (const tool_choice of ['auto', 'none']) {
      const next = await whole(family.id, { messages, tool_choice, temperature: 0, max_tokens: 16 });
      const choice = next.choices[0]!;
      expect(['stop', 'length', 'tool_calls']).toContain(choice.finish_reason);
      if (choice.finish_reason === 'tool_calls') for (const c of choice.message.tool_calls!) expectValidCall(c);
      else expect(typeof choice.message.content).toBe('string');
    }
  });
});

describe('tool_choice "auto" on a model that opens calls by itself', () => {
  it('writes freely until it opens a call, then the call is held to the tools\' schemas; whole and streamed agree', async () => {
    let calls = 0;
    let content = 0;
    for (let seed = 0; seed < 24; seed++) {
      const body = { tool_choice: 'auto', parallel_tool_calls: false, temperature: 1, seed, max_tokens: 400 };
      const w = (await whole('qwen-tags', body)).choices[0]!;
      if (w.message.tool_calls?.length) {
        calls++;
        expect(w.finish_reason).toBe('tool_calls');
        for (const call of w.message.tool_calls) expectValidCall(call);
        // The text before the tag stays content; nothing of the tags leaks into it.
        expect(w.message.content ?? '').not.toContain('<tool_call>');
        const s = await streamed('qwen-tags', body);
        expect(s.calls.map((c) => c.function)).toEqual(w.message.tool_calls.map((c) => c.function));
        expect(s.finish).toBe('tool_calls');
      } else {
        content++;
        expect(['stop', 'length']).toContain(w.finish_reason);
      }
    }
    console.log(`tool_choice "auto": ${calls} of 24 answers opened a call, ${content} stayed content`);
    // A 300-token vocabulary holding the tag: many answers open a call within 400 tokens, not all.
    expect(calls).toBeGreaterThan(0);
    expect(calls + content).toBe(24);
  });
});

describe('bad tools requests', () => {
  const refused = async (body: Record<string, unknown>, model = 'qwen25') => {
    const res = await post(model, body);
    expect(res.status).toBe(400);
    return ((await res.json()) as { error: { message: string; param: string } }).error;
  };

  it('each is a 400 naming the field', async () => {
    expect(await refused({ tool_choice: { type: 'function', function: { name: 'order_pizza' } } })).toMatchObject({ param: 'tool_choice' });
    expect(await refused({ tool_choice: 'sometimes' })).toMatchObject({ param: 'tool_choice' });
    expect(await refused({ tools: [{ type: 'function', function: {} }] })).toMatchObject({ param: 'tools[0].function.name' });
    expect(await refused({ tools: 'get_weather' })).toMatchObject({ param: 'tools' });
    expect(await refused({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { n: { type: 12 } } } } }] })).toMatchObject({
      param: 'tools[0].function.parameters',
    });
    expect(await refused({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { n: { type: 'integer', multipleOf: 2 } } } } }], tool_choice: 'required' })).toMatchObject({
      param: 'tools[0].function.parameters',
    });
    expect(await refused({ tool_choice: 'required', response_format: { type: 'json_object' } })).toMatchObject({ param: 'response_format' });
    expect(await refused({ parallel_tool_calls: 'often' })).toMatchObject({ param: 'parallel_tool_calls' });
    expect(await refused({ messages: [{ role: 'tool', content: 'x' }] })).toMatchObject({ param: 'messages[0].tool_call_id' });
  });

  it('a template that cannot render tools is a 400 naming tools', async () => {
    const e = await refused({ tool_choice: 'required' }, 'refuses-tools');
    expect(e.param).toBe('tools');
    expect(e.message).toMatch(/takes no tools/);
  });
});
