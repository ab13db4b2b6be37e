// Structured output and tools through the clients people use, against the real host and a
// random-weight model with Qwen 2.5's chat template (Hermes-style tool calls): the openai SDK's
// chat.completions.parse with a zod response format and its tool-call stream helpers, and
// LangChain's ChatOpenAI with withStructuredOutput and bindTools.
import fs from 'node:fs';
import path from 'node:path';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { TestHost } from './helpers/in-process-host.js';
import { libraryHost } from './helpers/library.js';
import { writeTinyChatModel } from './helpers/llm-models.js';

const QWEN_TEMPLATE = fs.readFileSync(path.join(__dirname, 'data/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja'), 'utf8');

let host: TestHost;
let client: OpenAI;
let token: string;

beforeAll(async () => {
  ({ host, token } = await libraryHost((dir) => ({ qwen: writeTinyChatModel(dir, 'qwen-like', { nCtx: 4096, chatTemplate: QWEN_TEMPLATE }) }), {
    LLM_CONTEXT_LENGTH: '4096',
    LLM_MAX_RUNNING_SEQUENCES: '8',
  }));
  client = new OpenAI({ baseURL: `${host.url}/v1`, apiKey: token, maxRetries: 0 });
}, 90_000);
afterAll(async () => {
  await host?.close();
});

// zod counts a string's length in UTF-16 units, JSON Schema (and so the grammar) in code points:
// the name is held to a pattern, on which both agree.
const Person = z.object({
  name: z.string().regex(/^[A-Z][a-z]{1,12}$/),
  age: z.number().int().min(0).max(120),
  tags: z.array(z.enum(['admin', 'user', 'guest'])).max(3),
});

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 24 }, unit: { enum: ['celsius', 'fahrenheit'] } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const time = {
  type: 'function' as const,
  function: {
    name: 'get_time',
    description: 'The time in a time zone',
    parameters: { type: 'object', properties: { zone: { type: 'string', maxLength: 16 } }, required: ['zone'], additionalProperties: false },
  },
};

describe('the openai SDK', () => {
  it('chat.completions.parse with a zod response format gives a parsed object, every time', async () => {
    for (let seed = 0; seed < 6; seed++) {
      const completion = await client.chat.completions.parse({
        model: 'qwen',
        messages: [{ role: 'user', content: 'Describe a person.' }],
        response_format: zodResponseFormat(Person, 'person'),
        temperature: 1,
        seed,
        max_tokens: 400,
      });
      const message = completion.choices[0]!.message;
      expect(completion.choices[0]!.finish_reason).toBe('stop');
      expect(message.parsed).not.toBeNull();
      expect(Person.parse(message.parsed)).toEqual(message.parsed);
    }
  });

  it('streams a required tool call that its stream helper assembles, with arguments valid for the tool', async () => {
    for (let seed = 0; seed < 4; seed++) {
      const stream = client.chat.completions.stream({
        model: 'qwen',
        messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
        tools: [weather, time],
        tool_choice: 'required',
        parallel_tool_calls: false,
        temperature: 1,
        seed,
        max_tokens: 300,
      });
      const argumentsDone: string[] = [];
      stream.on('tool_calls.function.arguments.done', (e) => argumentsDone.push(e.name));
      const final = await stream.finalChatCompletion();
      const choice = final.choices[0]!;
      expect(choice.finish_reason).toBe('tool_calls');
      const calls = choice.message.tool_calls!;
      expect(calls).toHaveLength(1);
      const call = calls[0]! as { id: string; type: string; function: { name: string; arguments: string } };
      expect(call.id).toMatch(/^call_/);
      expect(['get_weather', 'get_time']).toContain(call.function.name);
      expect(argumentsDone).toEqual([call.function.name]);
      const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
      if (call.function.name === 'get_weather') {
        expect(Object.keys(args).sort()).toEqual(['city', 'unit']);
        expect(['celsius', 'fahrenheit']).toContain(args.unit);
      } else expect(Object.keys(args)).toEqual(['zone']);
    }
  });

  it('a named tool is the one called, and the conversation goes on with its result', async () => {
    const first = await client.chat.completions.create({
      model: 'qwen',
      messages: [{ role: 'user', content: 'Weather?' }],
      tools: [weather, time],
      tool_choice: { type: 'function', function: { name: 'get_time' } },
      temperature: 1,
      seed: 2,
      max_tokens: 200,
    });
    const call = first.choices[0]!.message.tool_calls![0]! as { id: string; function: { name: string; arguments: string } };
    expect(call.function.name).toBe('get_time');
    const second = await client.chat.completions.create({
      model: 'qwen',
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: null, tool_calls: first.choices[0]!.message.tool_calls! },
        { role: 'tool', tool_call_id: call.id, content: '{"zone": "UTC", "time": "12:00"}' },
      ],
      tools: [weather, time],
      tool_choice: 'none',
      temperature: 0,
      max_tokens: 8,
    });
    expect(second.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(typeof second.choices[0]!.message.content).toBe('string');
  });
});

describe('LangChain ChatOpenAI', () => {
  const model = () =>
    new ChatOpenAI({ model: 'qwen', apiKey: token, configuration: { baseURL: `${host.url}/v1` }, temperature: 1, maxTokens: 400, maxRetries: 0 });

  it('withStructuredOutput gives objects that validate', async () => {
    for (const method of ['jsonSchema', 'functionCalling'] as const) {
      const structured = model().withStructuredOutput(Person, { name: 'person', method });
      for (let i = 0; i < 3; i++) {
        const person = await structured.invoke('Describe a person.', { configurable: {} });
        expect(Person.parse(person)).toEqual(person);
      }
    }
  });

  it('bindTools with a required choice gives tool calls whose arguments validate', async () => {
    const bound = model().bindTools([weather, time], { tool_choice: 'required' });
    for (let i = 0; i < 3; i++) {
      const message = await bound.invoke('Weather in Oslo?');
      expect(message.tool_calls!.length).toBeGreaterThan(0);
      for (const call of message.tool_calls!) {
        expect(['get_weather', 'get_time']).toContain(call.name);
        if (call.name === 'get_weather') expect(['celsius', 'fahrenheit']).toContain(call.args.unit);
        else expect(typeof call.args.zone).toBe('string');
      }
    }
  });
});
