// The OpenAI root surface on the real host: base URL /v1 with the model in the body, as vLLM,
// Ollama and llama.cpp's server serve it. The official openai SDK against both base URLs (root and
// per model), streaming with usage, /v1/models; the routes it shares /v1 with (realtime predict,
// the per-model routes) still reached; unknown and missing models; the reserved model ids refused
// at create (HTTP and CLI); max_tokens beyond the context clamped to it; /v1/embeddings on a chat
// model refused by name (embedding models: embed-serving.test.ts).
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { linearModel } from './helpers/models.js';

/** The token counts of a usage object; how many prompt tokens the prefix cache gave differs between repeats. */
const countsOf = (usage: unknown) => {
  const { prompt_tokens_details: _cached, ...counts } = usage as Record<string, unknown>;
  return counts;
};
import { tempDir } from './helpers/paths.js';

const CONTEXT = 256;

let host: TestHost;
let api: Api;
let token: string;
let key: string;

async function deployLibrary(name: string, modelId: string): Promise<void> {
  const res = await api('POST', '/api/v1/library/deployments', { name, model_id: modelId });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  for (;;) {
    const dep = await api<{ status: string; reason: string | null }>('GET', `/api/v1/library/deployments/${modelId}`);
    if (dep.body.status === 'LIVE') return;
    expect(dep.body.status, dep.body.reason ?? '').not.toBe('FAILED');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const root = () => new OpenAI({ baseURL: `${host.url}/v1`, apiKey: token, maxRetries: 0 });
const perModel = (modelId: string) => new OpenAI({ baseURL: `${host.url}/v1/${modelId}`, apiKey: token, maxRetries: 0 });

/** A raw POST, so that bodies the SDK would never send can be tried. */
async function post(path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${host.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const hello = [{ role: 'user' as const, content: 'Hello world' }];

beforeAll(async () => {
  const modelsDir = tempDir();
  writeTinyChatModel(modelsDir, 'tiny-chat');
  writeTinyChatModel(modelsDir, 'second-chat', { seed: 9 });
  writeTinyChatModel(modelsDir, 'spare-chat', { seed: 11 });
  host = await listen(await startInProcessHost({ MODELS_DIR: modelsDir, LLM_CONTEXT_LENGTH: String(CONTEXT), LLM_MAX_RUNNING_SEQUENCES: '8' }));
  ({ token, key } = await tokenFor(host));
  api = apiClient(host.url, token);
  await deployLibrary('tiny-chat', 'tiny');
  await deployLibrary('second-chat', 'second');
});
afterAll(async () => {
  await host.close();
});

describe('the openai SDK with base URL /v1', () => {
  it('chats, the model taken from the body, with the answer of the per-model route', async () => {
    const done = await root().chat.completions.create({ model: 'tiny', messages: hello, temperature: 0, max_tokens: 12 });
    expect(done.object).toBe('chat.completion');
    expect(done.model).toBe('tiny');
    expect(done.choices[0]!.message.role).toBe('assistant');
    expect(done.usage!.total_tokens).toBe(done.usage!.prompt_tokens + done.usage!.completion_tokens);
    const same = await perModel('tiny').chat.completions.create({ model: 'tiny', messages: hello, temperature: 0, max_tokens: 12 });
    expect(same.choices[0]!.message.content).toBe(done.choices[0]!.message.content);
    expect(countsOf(same.usage)).toEqual(countsOf(done.usage));
    // The other model answers under its own name, with its own weights.
    const other = await root().chat.completions.create({ model: 'second', messages: hello, temperature: 0, max_tokens: 12 });
    expect(other.model).toBe('second');
    expect(other.choices[0]!.message.content).not.toBe(done.choices[0]!.message.content);
  });

  it('streams the same text, then the usage chunk', async () => {
    const whole = await root().chat.completions.create({ model: 'tiny', messages: hello, temperature: 0, max_tokens: 12 });
    const stream = await root().chat.completions.create({ model: 'tiny', messages: hello, temperature: 0, max_tokens: 12, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish: string | null = null;
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(chunks.every((c) => c.model === 'tiny' && c.object === 'chat.completion.chunk')).toBe(true);
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(finish).toBe(whole.choices[0]!.finish_reason);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(countsOf(last.usage)).toEqual(countsOf(whole.usage));
  });

  it('continues a prompt on /v1/completions, plain and streamed', async () => {
    const done = await root().completions.create({ model: 'tiny', prompt: 'Once upon a time', temperature: 0, max_tokens: 8 });
    expect(done.object).toBe('text_completion');
    expect(done.model).toBe('tiny');
    expect(typeof done.choices[0]!.text).toBe('string');
    const same = await perModel('tiny').completions.create({ model: 'tiny', prompt: 'Once upon a time', temperature: 0, max_tokens: 8 });
    expect(same.choices[0]!.text).toBe(done.choices[0]!.text);
    const stream = await root().completions.create({ model: 'tiny', prompt: 'Once upon a time', temperature: 0, max_tokens: 8, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.Completions.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(done.choices[0]!.text);
    expect(countsOf(usage)).toEqual(countsOf(done.usage));
  });

  it('lists every live library model on /v1/models, and retrieves one', async () => {
    const page = await root().models.list();
    expect(page.data.map((m) => m.id)).toEqual(['tiny', 'second']);
    for (const m of page.data) {
      expect(m.object).toBe('model');
      expect(m.owned_by).toBe('platform');
      expect(Number.isInteger(m.created)).toBe(true);
    }
    const raw = await api<Record<string, unknown>>('GET', '/v1/models');
    expect(Object.keys(raw.body).sort()).toEqual(['data', 'object']);
    expect(raw.body.object).toBe('list');
    expect(await root().models.retrieve('second')).toMatchObject({ id: 'second', object: 'model', owned_by: 'platform' });
  });

  it('needs the bearer token, as every model route does', async () => {
    for (const [method, path] of [
      ['GET', '/v1/models'],
      ['POST', '/v1/chat/completions'],
      ['POST', '/v1/completions'],
    ] as const) {
      const res = await fetch(`${host.url}${path}`, { method, ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', messages: hello, prompt: 'x' }) } : {}) });
      expect(res.status, path).toBe(401);
      expect(((await res.json()) as any).error.code).toBe('unauthenticated');
    }
    const bad = new OpenAI({ baseURL: `${host.url}/v1`, apiKey: 'not-a-token', maxRetries: 0 });
    await expect(bad.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe('the per-model base URL and the other /v1 routes', () => {
  it('the SDK with base URL /v1/<model_id> still chats and lists the one model', async () => {
    const client = perModel('second');
    const done = await client.chat.completions.create({ model: 'second', messages: hello, temperature: 0, max_tokens: 6 });
    expect(done.model).toBe('second');
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['second']);
  });

  it('a realtime model is still served at /v1/<model_id>/predict and /v1/<model_id>/<variation>/predict', async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'linear' })).status).toBe(201);
    const build = await api<{ build_id: string }>('POST', '/api/v1/models/linear/builds?feature_names=a,b', linearModel(['a', 'b'], 0.5));
    expect(build.status, JSON.stringify(build.body)).toBe(201);
    const dep = await api<{ deployment_id: string }>('POST', '/api/v1/models/linear/deployments', { build_id: build.body.build_id });
    expect(dep.status, JSON.stringify(dep.body)).toBe(202);
    expect((await waitForDeployment(api, dep.body.deployment_id)).status).toBe('LIVE');
    const rows = { columns: ['a', 'b'], index: [0], data: [[0, 0]] };
    for (const path of ['/v1/linear/predict', '/v1/linear/default/predict']) {
      const res = await api<Array<Record<string, unknown>>>('POST', path, rows);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers.get('x-variation')).toBe('default');
      expect(res.body).toHaveLength(1);
      // x = 0: the answer is the bias.
      expect(JSON.stringify(res.body[0])).toContain('0.5');
    }
    // Named on the root routes, it is pointed to its predict route; on the per-model routes too,
    // with the same message, the param being the URL's model_id there.
    const message = 'model "linear" is a realtime model; call /v1/linear/predict';
    const chat = await post('/v1/chat/completions', { model: 'linear', messages: hello });
    expect(chat.status).toBe(400);
    expect(chat.body.error).toMatchObject({ code: 'invalid_argument', param: 'model', message });
    const retrieve = await api('GET', '/v1/models/linear');
    expect(retrieve.status).toBe(400);
    expect(retrieve.body.error).toMatchObject({ code: 'invalid_argument', param: 'model', message });
    for (const [method, path, body] of [
      ['POST', '/v1/linear/chat/completions', { model: 'linear', messages: hello }],
      ['GET', '/v1/linear/models', undefined],
      ['POST', '/api/v1/models/linear/tokenize', { text: 'Hi' }],
    ] as const) {
      const res = await api(method, path, body);
      expect(res.status, path).toBe(400);
      expect(res.body.error, path).toMatchObject({ code: 'invalid_argument', param: 'model_id', message });
    }
  });
});

describe('bad models on the root routes', () => {
  it('an unknown model is a 404 naming it, on every root route', async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', { model: 'nobody', messages: hello }],
      ['/v1/completions', { model: 'nobody', prompt: 'Hi' }],
      ['/v1/chat/completions', { model: 'nobody', messages: hello, stream: true }],
    ] as const) {
      const res = await post(path, body);
      expect(res.status, path).toBe(404);
      expect(res.body.error).toEqual({
        code: 'not_found',
        message: 'model "nobody" does not exist; GET /v1/models lists the models served here',
        param: 'model',
        type: 'invalid_request_error',
      });
    }
    const missing = await api('GET', '/v1/models/nobody');
    expect(missing.status).toBe(404);
    expect(missing.body.error.param).toBe('model');
    // The per-model routes give the same answer, naming the URL's model_id.
    for (const path of ['/v1/nobody/models', '/v1/nobody/chat/completions']) {
      const res = path.endsWith('models') ? await api('GET', path) : await post(path, { model: 'nobody', messages: hello });
      expect(res.status, path).toBe(404);
      expect(res.body.error, path).toEqual({
        code: 'not_found',
        message: 'model "nobody" does not exist; GET /v1/models lists the models served here',
        param: 'model_id',
        type: 'invalid_request_error',
      });
    }
    await expect(root().chat.completions.create({ model: 'nobody', messages: hello })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('a missing or malformed model is a 400 naming the field', async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', { messages: hello }],
      ['/v1/completions', { prompt: 'Hi' }],
    ] as const) {
      const res = await post(path, body);
      expect(res.status, path).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_argument', param: 'model', message: 'body is missing the required field "model"' });
    }
    const numeric = await post('/v1/chat/completions', { model: 7, messages: hello });
    expect(numeric.status).toBe(400);
    expect(numeric.body.error.param).toBe('model');
    const empty = await post('/v1/completions', { model: '', prompt: 'Hi' });
    expect(empty.status).toBe(400);
    expect(empty.body.error.param).toBe('model');
  });

  it('the body is checked as on the per-model routes', async () => {
    const noMessages = await post('/v1/chat/completions', { model: 'tiny' });
    expect(noMessages.body.error).toMatchObject({ param: 'messages', message: 'body is missing the required field "messages"' });
    const unsupported = await post('/v1/chat/completions', { model: 'tiny', messages: hello, n: 30 });
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.error.param).toBe('n');
    const badPrompt = await post('/v1/completions', { model: 'tiny', prompt: ['a', 'b'] });
    expect(badPrompt.status).toBe(400);
    expect(badPrompt.body.error).toMatchObject({ param: 'prompt', message: 'prompt must be a string' });
  });
});

describe('POST /v1/embeddings', () => {
  it('answers a chat model by last-token pooling, in the OpenAI shape; an unknown model is a 404', async () => {
    for (const body of [
      { model: 'tiny', input: 'Hello world' },
      { model: 'tiny', input: ['a', 'b'] },
    ]) {
      const res = await post('/v1/embeddings', body);
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(res.body).toMatchObject({ object: 'list', model: 'tiny' });
      for (const d of res.body.data as Array<{ object: string; embedding: number[] }>) {
        expect(d.object).toBe('embedding');
        expect(Math.hypot(...d.embedding)).toBeCloseTo(1, 5);
      }
    }
    expect((await post('/v1/embeddings', { model: 'nobody', input: [[1, 2, 3]] })).status).toBe(404);
    const sdk = await root().embeddings.create({ model: 'tiny', input: 'Hello world' });
    expect(sdk.data[0]!.embedding.length).toBeGreaterThan(0);
  });

  it('checks the token first, then the body', async () => {
    const anonymous = await fetch(`${host.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', input: 'x' }) });
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as any).error.code).toBe('unauthenticated');
    const noInput = await post('/v1/embeddings', { model: 'tiny' });
    expect(noInput.status).toBe(400);
    expect(noInput.body.error).toMatchObject({ code: 'invalid_argument', param: 'input' });
    const noModel = await post('/v1/embeddings', { input: 'x' });
    expect(noModel.body.error).toMatchObject({ code: 'invalid_argument', param: 'model', message: 'body is missing the required field "model"' });
    const badInput = await post('/v1/embeddings', { model: 'tiny', input: 7 });
    expect(badInput.status).toBe(400);
    expect(badInput.body.error.param).toBe('input');
  });
});

describe('reserved model ids', () => {
  const reserved = ['chat', 'completions', 'embeddings', 'models'];
  const message = (id: string) =>
    `model id "${id}" is reserved for the OpenAI root routes (/v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models); choose another id`;

  it('are refused at realtime model create and at library deploy, with a 400 that says why', async () => {
    for (const id of reserved) {
      const realtime = await api('POST', '/api/v1/models', { model_id: id });
      expect(realtime.status, id).toBe(400);
      expect(realtime.body.error).toEqual({ code: 'invalid_argument', message: message(id), param: 'model_id', type: 'invalid_request_error' });
      const library = await api('POST', '/api/v1/library/deployments', { name: 'spare-chat', model_id: id });
      expect(library.status, id).toBe(400);
      expect(library.body.error).toEqual({ code: 'invalid_argument', message: message(id), param: 'model_id', type: 'invalid_request_error' });
    }
    // Nothing was recorded: the file is still free to deploy under another id.
    expect((await api<{ models: Array<{ model_id: string }> }>('GET', '/api/v1/models')).body.models.map((m) => m.model_id)).not.toEqual(expect.arrayContaining(['chat']));
    expect((await api<{ deployments: Array<{ name: string }> }>('GET', '/api/v1/library/deployments')).body.deployments.map((d) => d.name)).not.toContain('spare-chat');
  });

  it('are refused by `platform library deploy --model-id` and `platform models create`', async () => {
    const env = { PLATFORM_URL: host.url, PLATFORM_API_KEY: key, PLATFORM_CACHE_DIR: tempDir() };
    const deploy = await runCli(['library', 'deploy', 'spare-chat', '--model-id', 'embeddings'], env);
    expect(deploy.code).not.toBe(0);
    expect(deploy.stderr).toContain(message('embeddings'));
    const create = await runCli(['models', 'create', '--model-id', 'chat'], env);
    expect(create.code).not.toBe(0);
    expect(create.stderr).toContain(message('chat'));
  });

  it('only the exact ids: a name that merely contains one is fine', async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'chat-bot' })).status).toBe(201);
  });
});

describe('max_tokens beyond the context', () => {
  const promptTokens = async (text: string) => (await api<{ tokens: number[] }>('POST', '/api/v1/models/tiny/tokenize', { text })).body.tokens.length;
  const chatPromptTokens = async (content: string) =>
    (await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content }], max_tokens: 1 })).body.usage.prompt_tokens as number;

  /** A prompt that leaves exactly `room` tokens of the context ("a" is one token of the tiny vocabulary, and never merges). */
  async function promptLeaving(room: number, measure: (text: string) => Promise<number>): Promise<string> {
    let text = 'Once upon a time there was a little girl.';
    let used = await measure(text);
    while (used < CONTEXT - room) {
      text += 'a'.repeat(CONTEXT - room - used);
      used = await measure(text);
    }
    expect(used).toBe(CONTEXT - room);
    return text;
  }

  it('is clamped to the room the prompt leaves, and the answer ends with finish_reason "length"', async () => {
    // A small room, so that the (random) model reaches its end before it happens to say EOS.
    const room = 6;
    const prompt = await promptLeaving(room, promptTokens);
    const res = await post('/v1/completions', { model: 'tiny', prompt, max_tokens: 100_000, temperature: 0 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.choices[0].finish_reason).toBe('length');
    expect(countsOf(res.body.usage)).toEqual({ prompt_tokens: CONTEXT - room, completion_tokens: room, total_tokens: CONTEXT });
    // The same through the chat route, streamed, on the per-model base URL.
    const content = await promptLeaving(room, chatPromptTokens);
    const stream = await perModel('tiny').chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content }],
      max_tokens: CONTEXT,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let finish: string | null = null;
    let usage: OpenAI.Completions.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(finish).toBe('length');
    expect(countsOf(usage)).toEqual({ prompt_tokens: CONTEXT - room, completion_tokens: room, total_tokens: CONTEXT });
  });

  it('a max_tokens within the room is kept as asked', async () => {
    const res = await post('/v1/completions', { model: 'tiny', prompt: 'Once upon a time', max_tokens: 5, temperature: 0 });
    expect(res.body.usage.completion_tokens).toBeLessThanOrEqual(5);
  });

  it('a prompt that alone fills the context stays a 400 naming messages or prompt', async () => {
    const long = 'Hello world '.repeat(200);
    expect(await promptTokens(long)).toBeGreaterThanOrEqual(CONTEXT);
    const text = await post('/v1/completions', { model: 'tiny', prompt: long, max_tokens: 4 });
    expect(text.status).toBe(400);
    expect(text.body.error.param).toBe('prompt');
    expect(text.body.error.message).toMatch(/^the prompt has \d+ tokens; the model's context is 256 tokens, prompt and completion together; shorten prompt$/);
    const chat = await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: long }] });
    expect(chat.status).toBe(400);
    expect(chat.body.error.param).toBe('messages');
  });
});
