// response_format through the real host, on a random-weight model that would otherwise never
// write JSON: 200 generated schemas (test/helpers/schema-generator.ts) each answered at
// temperature 1, on chat and legacy completions, whole and streamed, and every answer validates
// with ajv (+ ajv-formats); json_object gives objects; a value cut short is "length"; the grammar
// is compiled once per schema (the LRU); bad and unsupported schemas are 400s naming the field.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schemaValidator } from './helpers/ajv.js';
import type { TestHost } from './helpers/in-process-host.js';
import { libraryHost } from './helpers/library.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { generateSchemas } from './helpers/schema-generator.js';
import { grammarCompiles } from '../src/llm/chat/constraint.js';

let host: TestHost;
let token: string;

beforeAll(async () => {
  ({ host, token } = await libraryHost((dir) => ({ tiny: writeTinyChatModel(dir, 'tiny-chat', { nCtx: 2048 }) }), { LLM_CONTEXT_LENGTH: '2048', LLM_MAX_RUNNING_SEQUENCES: '8' }));
}, 90_000);
afterAll(async () => {
  await host?.close();
});

const post = (route: 'chat/completions' | 'completions', body: Record<string, unknown>) =>
  fetch(`${host.url}/v1/tiny/${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', ...body }),
  });

/** The text and finish reason of an answer, whole or streamed (SSE chunks joined). */
async function answer(route: 'chat/completions' | 'completions', body: Record<string, unknown>): Promise<{ status: number; text: string; finish: string | null; raw: unknown }> {
  const res = await post(route, body);
  if (res.status !== 200) return { status: res.status, text: '', finish: null, raw: await res.json() };
  if (!body.stream) {
    const json = (await res.json()) as { choices: Array<{ message?: { content: string }; text?: string; finish_reason: string }> };
    const c = json.choices[0]!;
    return { status: 200, text: c.message?.content ?? c.text ?? '', finish: c.finish_reason, raw: json };
  }
  let text = '';
  let finish: string | null = null;
  for (const event of (await res.text()).split('\n\n')) {
    if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
    const chunk = JSON.parse(event.slice(6)) as { choices: Array<{ delta?: { content?: string }; text?: string; finish_reason: string | null }> };
    for (const c of chunk.choices) {
      text += c.delta?.content ?? c.text ?? '';
      finish = c.finish_reason ?? finish;
    }
  }
  return { status: 200, text, finish, raw: null };
}

const jsonSchema = (schema: unknown, name = 'answer') => ({ type: 'json_schema', json_schema: { name, schema, strict: true } });

describe('response_format json_schema', () => {
  it('200 generated schemas, each answered at temperature 1: every answer validates', async () => {
    const schemas = generateSchemas(20261125, 200);
    const ajv = schemaValidator();
    const before = { ...grammarCompiles };
    const failures: string[] = [];
    const finishes: Record<string, number> = {};
    // Eight at a time (the engine's running sequences), across both routes and both answer forms.
    for (let i = 0; i < schemas.length; i += 8) {
      await Promise.all(
        schemas.slice(i, i + 8).map(async (schema, j) => {
          const n = i + j;
          const route = n % 2 === 0 ? 'chat/completions' : 'completions';
          const body = {
            ...(route === 'chat/completions' ? { messages: [{ role: 'user', content: 'Answer in JSON.' }] } : { prompt: 'JSON:' }),
            response_format: jsonSchema(schema),
            temperature: 1,
            seed: n,
            max_tokens: 1500,
            stream: n % 4 >= 2,
          };
          const a = await answer(route, body);
          finishes[a.finish ?? String(a.status)] = (finishes[a.finish ?? String(a.status)] ?? 0) + 1;
          if (a.status !== 200) return failures.push(`schema ${n}: HTTP ${a.status} ${JSON.stringify(a.raw)}`);
          let value: unknown;
          try {
            value = JSON.parse(a.text);
          } catch {
            return failures.push(`schema ${n} (${route}, stream ${body.stream}): not JSON (${a.finish}): ${JSON.stringify(a.text.slice(0, 300))}`);
          }
          if (!ajv.validate(schema as object, value)) failures.push(`schema ${n}: ${ajv.errorsText()} in ${a.text.slice(0, 200)}`);
          if (a.finish !== 'stop') failures.push(`schema ${n}: finish ${a.finish}`);
        }),
      );
    }
    expect(failures, failures.slice(0, 5).join('\n')).toEqual([]);
    expect(finishes).toEqual({ stop: 200 });
    // One compile per request, cold or from the cache; every distinct schema compiled at least once.
    expect(grammarCompiles.cold - before.cold + grammarCompiles.cached - before.cached).toBe(200);
    expect(grammarCompiles.cold - before.cold).toBeGreaterThanOrEqual(new Set(schemas.map((s) => JSON.stringify(s))).size);
  }, 240_000);

  it('the same schema again is compiled once (the LRU) and still enforced', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' }, n: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['ok', 'n'], additionalProperties: false };
    const before = { ...grammarCompiles };
    for (let seed = 0; seed < 4; seed++) {
      const a = await answer('chat/completions', { messages: [{ role: 'user', content: 'x' }], response_format: jsonSchema(schema), temperature: 1, seed });
      expect(a.finish).toBe('stop');
      const value = JSON.parse(a.text) as { ok: boolean; n: number };
      expect(Object.keys(value)).toEqual(['ok', 'n']);
      expect(typeof value.ok).toBe('boolean');
      expect(value.n).toBeGreaterThanOrEqual(1);
      expect(value.n).toBeLessThanOrEqual(9);
    }
    expect(grammarCompiles.cold - before.cold).toBe(1);
    expect(grammarCompiles.cached - before.cached).toBe(3);
  });

  it('a value cut short by max_tokens ends with finish_reason "length"', async () => {
    const schema = { type: 'array', items: { type: 'string', minLength: 10, maxLength: 10 }, minItems: 20, maxItems: 20 };
    for (const stream of [false, true]) {
      const a = await answer('chat/completions', { messages: [{ role: 'user', content: 'x' }], response_format: jsonSchema(schema), temperature: 1, seed: 1, max_tokens: 12, stream });
      expect(a.finish).toBe('length');
      expect(() => JSON.parse(a.text)).toThrow();
      expect(a.text.trimStart().startsWith('[')).toBe(true);
    }
  });

  it('streamed answers are the whole answers, chunk by chunk', async () => {
    const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 12 }, tags: { type: 'array', items: { enum: ['a', 'b', 'ü', '😀'] }, maxItems: 3 } }, required: ['name', 'tags'] };
    for (const route of ['chat/completions', 'completions'] as const) {
      const base = route === 'chat/completions' ? { messages: [{ role: 'user', content: 'x' }] } : { prompt: 'x' };
      const whole = await answer(route, { ...base, response_format: jsonSchema(schema), temperature: 1, seed: 9 });
      const streamed = await answer(route, { ...base, response_format: jsonSchema(schema), temperature: 1, seed: 9, stream: true });
      expect(streamed.text).toBe(whole.text);
      expect(streamed.finish).toBe('stop');
      JSON.parse(whole.text);
    }
  });
});

describe('response_format json_object', () => {
  it('gives a JSON object on both routes, whole and streamed', async () => {
    for (let seed = 0; seed < 12; seed++) {
      const route = seed % 2 === 0 ? 'chat/completions' : 'completions';
      const base = route === 'chat/completions' ? { messages: [{ role: 'user', content: 'x' }] } : { prompt: 'x' };
      const a = await answer(route, { ...base, response_format: { type: 'json_object' }, temperature: 0.7, seed, max_tokens: 1500, stream: seed % 3 === 0 });
      if (a.finish === 'length') continue; // a deep object may not close within max_tokens; it is never "stop" and broken
      expect(a.finish).toBe('stop');
      const value = JSON.parse(a.text) as unknown;
      expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
    }
  });

  it('text is as without a response format', async () => {
    const plain = await answer('chat/completions', { messages: [{ role: 'user', content: 'x' }], temperature: 0, max_tokens: 12 });
    const text = await answer('chat/completions', { messages: [{ role: 'user', content: 'x' }], temperature: 0, max_tokens: 12, response_format: { type: 'text' } });
    expect(text.text).toBe(plain.text);
  });
});

describe('bad response formats', () => {
  const refused = async (response_format: unknown) => {
    const res = await post('chat/completions', { messages: [{ role: 'user', content: 'x' }], response_format });
    expect(res.status).toBe(400);
    return ((await res.json()) as { error: { message: string; param: string; code: string } }).error;
  };

  it('each is a 400 naming the field', async () => {
    expect(await refused('json')).toMatchObject({ param: 'response_format', code: 'invalid_argument' });
    expect(await refused({ type: 'yaml' })).toMatchObject({ param: 'response_format.type' });
    expect(await refused({ type: 'json_schema' })).toMatchObject({ param: 'response_format.json_schema' });
    expect(await refused({ type: 'json_schema', json_schema: { name: 'has space', schema: {} } })).toMatchObject({ param: 'response_format.json_schema.name' });
    expect(await refused({ type: 'json_schema', json_schema: { name: 'a', schema: 12 } })).toMatchObject({ param: 'response_format.json_schema.schema' });
    expect(await refused({ type: 'json_schema', json_schema: { name: 'a', schema: {}, strict: 'yes' } })).toMatchObject({ param: 'response_format.json_schema.strict' });
  });

  it('a schema that is not valid JSON Schema is refused', async () => {
    const e = await refused(jsonSchema({ type: 12 }));
    expect(e.param).toBe('response_format.json_schema.schema');
    expect(e.message).toMatch(/type/);
  });

  it('a construct we do not enforce is refused by name, never silently ignored', async () => {
    const e = await refused(jsonSchema({ type: 'object', properties: { n: { type: 'integer', multipleOf: 3 } } }));
    expect(e.param).toBe('response_format.json_schema.schema');
    expect(e.message).toMatch(/multipleOf/);
    expect(e.message).toMatch(/\/properties\/n/);
    const look = await refused(jsonSchema({ type: 'string', pattern: '(?=a)b' }));
    expect(look.message).toMatch(/pattern|lookahead|look/i);
  });

  it('a schema too large to compile is a 400, quickly', async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 4000; i++) properties[`p${i}`] = { type: 'string', minLength: 100, maxLength: 200 };
    const started = performance.now();
    const e = await refused(jsonSchema({ type: 'object', properties, required: Object.keys(properties) }));
    expect(e.message).toMatch(/too large|exceed|limit/i);
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});

it('the model still answers freely after all that', async () => {
  const a = await answer('chat/completions', { messages: [{ role: 'user', content: path.basename('x') }], max_tokens: 5, temperature: 0 });
  expect(a.status).toBe(200);
});
