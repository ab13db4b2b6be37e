// Library models behind the OpenAI API, end to end on the real host: the catalogue, deployment,
// chat and legacy completions (JSON and SSE, parsed byte for byte), the official openai SDK,
// every bad input, concurrent streams, a disconnect, back-pressure, an instance change under
// load, the four metrics, tokenize/detokenize, and undeploy.
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Api } from './helpers/api.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { spmVocab, writeTinyChatModel } from './helpers/llm-models.js';
import { tinyModel, writeGguf } from './helpers/gguf-writer.js';
import { tempDir } from './helpers/paths.js';
import { cudaUnavailableReason } from '../src/native/cuda-availability.js';

const STORIES = path.resolve(__dirname, '../../shared/fixtures/stories260K.gguf');

let host: TestHost;
let api: Api;
let token: string;
let modelsDir: string;

async function deployLibrary(a: Api, name: string, modelId: string, body: Record<string, unknown> = {}): Promise<{ status: string; reason: string | null }> {
  const res = await a<{ status: string }>('POST', '/api/v1/library/deployments', { name, model_id: modelId, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  expect(res.body.status).toBe('PENDING');
  for (;;) {
    const dep = await a<{ status: string; reason: string | null }>('GET', `/api/v1/library/deployments/${modelId}`);
    if (dep.body.status !== 'PENDING' && dep.body.status !== 'DEPLOYING') return dep.body;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Parses an SSE body exactly: every event is `data: <payload>\n\n`, and nothing else. */
function parseSse(text: string): string[] {
  expect(text.endsWith('\n\n')).toBe(true);
  return text
    .slice(0, -2)
    .split('\n\n')
    .map((event) => {
      expect(event.startsWith('data: ')).toBe(true);
      expect(event.includes('\n')).toBe(false);
      return event.slice('data: '.length);
    });
}

const chat = (body: Record<string, unknown>, modelId = 'tiny', signal?: AbortSignal) =>
  fetch(`${host.url}/v1/${modelId}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: modelId, ...body }),
    ...(signal ? { signal } : {}),
  });

beforeAll(async () => {
  modelsDir = tempDir();
  writeTinyChatModel(modelsDir, 'tiny-chat', { license: 'apache-2.0' });
  fs.writeFileSync(path.join(modelsDir, 'broken.gguf'), 'GGUF but not really');
  host = await listen(await startInProcessHost({ MODELS_DIR: modelsDir, LLM_CONTEXT_LENGTH: '256', LLM_MAX_RUNNING_SEQUENCES: '8' }));
  token = (await tokenFor(host)).token;
  api = apiClient(host.url, token);
  const dep = await deployLibrary(api, 'tiny-chat', 'tiny');
  expect(dep.status, dep.reason ?? '').toBe('LIVE');
});
afterAll(async () => {
  await host.close();
});

describe('the library', () => {
  it('lists the GGUF files of MODELS_DIR with their metadata, and the unreadable ones apart', async () => {
    const res = await api<{ models: Array<Record<string, unknown>>; problems: Array<{ file: string }> }>('GET', '/api/v1/library');
    expect(res.status).toBe(200);
    const tiny = res.body.models.find((m) => m.file === 'tiny-chat.gguf')!;
    expect(tiny).toMatchObject({ name: 'tiny-chat', architecture: 'llama', quantization: 'F32', context_length: 512, license: 'apache-2.0' });
    expect(tiny.parameters).toBeGreaterThan(50_000);
    expect(tiny.size_bytes).toBe(fs.statSync(path.join(modelsDir, 'tiny-chat.gguf')).size);
    expect(res.body.problems.map((p) => p.file)).toEqual(['broken.gguf']);
  });

  it('shows the deployment with name, instance type, licence and model id, under the project library', async () => {
    const dep = await api<Record<string, unknown>>('GET', '/api/v1/library/deployments/tiny');
    expect(dep.body).toMatchObject({ model_id: 'tiny', name: 'tiny-chat', instance_type: 'cpu', license: 'apache-2.0', status: 'LIVE' });
    const models = await api<{ models: Array<{ model_id: string; kind: string }> }>('GET', '/api/v1/models?project=library');
    expect(models.body.models).toEqual([expect.objectContaining({ model_id: 'tiny', kind: 'library' })]);
    const probe = await api<{ object: string; data: Array<{ id: string }> }>('GET', '/v1/tiny/models');
    expect(probe.body.object).toBe('list');
    expect(probe.body.data.map((m) => m.id)).toEqual(['tiny']);
  });

  it('refuses an unknown file, a taken name or id, and cuda without a GPU backend', async () => {
    expect((await api('POST', '/api/v1/library/deployments', { name: 'nothing.gguf', model_id: 'x1' })).status).toBe(404);
    expect((await api('POST', '/api/v1/library/deployments', { name: 'tiny-chat', model_id: 'x2' })).status).toBe(409);
    expect((await api('POST', '/api/v1/library/deployments', { name: 'tiny-chat.gguf', model_id: 'tiny' })).status).toBe(409);
    const noCuda = cudaUnavailableReason();
    if (noCuda !== null) {
      const cuda = await api<{ error: { message: string; param: string } }>('POST', '/api/v1/library/deployments', { name: 'tiny-chat', model_id: 'x3', instance_type: 'cuda' });
      expect(cuda.status).toBe(400);
      expect(cuda.body.error.param).toBe('instance_type');
      expect(cuda.body.error.message).toBe(`instance type cuda is not available on this host: ${noCuda}`);
    }
  });
});

describe('chat completions', () => {
  let greedy: string;

  it('answers in the OpenAI shape, taking numbers sent as strings', async () => {
    const res = await chat({ messages: [{ role: 'user', content: 'Hello world' }], temperature: '0', max_tokens: '12' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, any>;
    expect(body.id).toMatch(/^chatcmpl-/);
    expect(body.object).toBe('chat.completion');
    expect(body.model).toBe('tiny');
    expect(typeof body.created).toBe('number');
    expect(body.choices).toHaveLength(1);
    expect(body.choices[0].message.role).toBe('assistant');
    expect(typeof body.choices[0].message.content).toBe('string');
    expect(['stop', 'length']).toContain(body.choices[0].finish_reason);
    expect(body.usage.prompt_tokens).toBeGreaterThan(0);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
    if (body.choices[0].finish_reason === 'length') expect(body.usage.completion_tokens).toBe(12);
    greedy = body.choices[0].message.content;
  });

  it('streams the same text as SSE, with the role first, the finish reason last, usage, and [DONE]', async () => {
    const res = await chat({ messages: [{ role: 'user', content: 'Hello world' }], temperature: 0, max_tokens: 12, stream: true, stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = parseSse(await res.text());
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Record<string, any>);
    const ids = new Set(chunks.map((c) => c.id));
    expect(ids.size).toBe(1);
    for (const c of chunks) expect(c.object).toBe('chat.completion.chunk');
    expect(chunks[0]!.choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const usage = chunks.at(-1)!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage.completion_tokens).toBeGreaterThan(0);
    const last = chunks.at(-2)!;
    expect(['stop', 'length']).toContain(last.choices[0].finish_reason);
    expect(chunks.slice(0, -2).every((c) => c.choices[0].finish_reason === null && c.usage === null)).toBe(true);
    const text = chunks.slice(1, -1).map((c) => c.choices[0].delta.content ?? '').join('');
    expect(text).toBe(greedy);
  });

  it('cuts at a stop string without leaking any of it', async () => {
    expect(greedy.length).toBeGreaterThan(3);
    const stop = greedy.slice(2, 4);
    const res = await chat({ messages: [{ role: 'user', content: 'Hello world' }], temperature: 0, max_tokens: 12, stop: [stop], stream: true });
    const chunks = parseSse(await res.text()).slice(0, -1).map((e) => JSON.parse(e) as Record<string, any>);
    const text = chunks.map((c) => c.choices[0].delta.content ?? '').join('');
    expect(text).toBe(greedy.slice(0, greedy.indexOf(stop)));
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('stop');
  });

  it('concurrent streams each receive only their own tokens', async () => {
    const prompts = ['Once upon a time', 'the little girl', 'Hello', 'and it is', 'to the world', 'a'];
    const alone: string[] = [];
    for (const p of prompts) {
      const res = await chat({ messages: [{ role: 'user', content: p }], temperature: 0, max_tokens: 16 });
      alone.push(((await res.json()) as any).choices[0].message.content);
    }
    const together = await Promise.all(
      prompts.map(async (p) => {
        const res = await chat({ messages: [{ role: 'user', content: p }], temperature: 0, max_tokens: 16, stream: true });
        return parseSse(await res.text())
          .slice(0, -1)
          .map((e) => (JSON.parse(e) as any).choices[0].delta.content ?? '')
          .join('');
      }),
    );
    expect(together).toEqual(alone);
  });

  it('a client that disconnects cancels its generation at once', async () => {
    // A bigger model with a long context, so that the generation is still running when we leave.
    const dir = tempDir();
    writeTinyChatModel(dir, 'long', { nEmbd: 256, nLayer: 4, nCtx: 4096 });
    const h = await listen(await startInProcessHost({ MODELS_DIR: dir, LLM_CONTEXT_LENGTH: '4096' }));
    try {
      const t = (await tokenFor(h)).token;
      expect((await deployLibrary(apiClient(h.url, t), 'long', 'long')).status).toBe('LIVE');
      const controller = new AbortController();
      const res = await fetch(`${h.url}/v1/long/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'long', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4000, temperature: 0.8, stream: true }),
        signal: controller.signal,
      });
      await res.body!.getReader().read();
      const model = h.app.library.instance('long').model;
      expect(model.stats().running + model.stats().waiting).toBe(1);
      controller.abort();
      const until = Date.now() + 5000;
      while (model.stats().running + model.stats().waiting > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
      const stats = model.stats();
      expect(stats.running).toBe(0);
      expect(stats.kvBlocksUsed).toBe(0);
      // Cancelled, not finished: far fewer tokens than were asked for.
      expect(stats.tokensGenerated).toBeLessThan(4000);
      // And not counted as a finished request.
      const metrics = await (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${t}` } })).text();
      expect(metrics).not.toMatch(/platform:request_success_total\{[^}]*model="long"/);
    } finally {
      await h.close();
    }
  });
});

describe('bad input', () => {
  const expect400 = async (body: Record<string, unknown>, param: string, message: RegExp, modelId = 'tiny') => {
    const res = await chat(body, modelId);
    const json = (await res.json()) as { error: { code: string; message: string; param: string } };
    expect(res.status, JSON.stringify(json)).toBe(400);
    expect(json.error.code).toBe('invalid_argument');
    expect(json.error.param).toBe(param);
    expect(json.error.message).toMatch(message);
  };
  const hello = [{ role: 'user', content: 'Hello' }];

  it('the URL and body models must agree', async () => {
    const res = await fetch(`${host.url}/v1/tiny/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'other', messages: hello }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toBe('the model in the body ("other") is not the model in the URL ("tiny")');
  });
  it('unsupported fields are refused by name', async () => {
    await expect400({ messages: hello, functions: [{ name: 'f' }] }, 'functions', /functions is not supported/);
    await expect400({ messages: hello, n: 17 }, 'n', /n must be between 1 and 16/);
    await expect400({ messages: hello, best_of: 2 }, 'best_of', /best_of is not supported/);
    await expect400({ messages: hello, echo: true }, 'echo', /echo is not supported/);
  });
  it('strings that are not numbers, and numbers out of range', async () => {
    await expect400({ messages: hello, temperature: 'hot' }, 'temperature', /temperature must be a number, got "hot"/);
    await expect400({ messages: hello, max_tokens: '1.5' }, 'max_tokens', /must be an integer/);
    await expect400({ messages: hello, top_p: 3 }, 'top_p', /between 0 and 1/);
  });
  it('bad messages', async () => {
    await expect400({ messages: [] }, 'messages', /non-empty/);
    await expect400({ messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role', /must be "system", "developer", "user", "assistant" or "tool"/);
    await expect400({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages[0].content[0]', /text only/);
  });
  it('a prompt longer than the context says the limits (max_tokens beyond it is clamped: test/llm-openai-root.test.ts)', async () => {
    await expect400({ messages: [{ role: 'user', content: 'Hello world '.repeat(200) }] }, 'messages', /the model's context is 256 tokens/);
  });
  it('an unknown model is 404, a realtime model 400, a model that failed to load 503', async () => {
    expect((await chat({ messages: hello }, 'nobody')).status).toBe(404);
    expect((await api('POST', '/api/v1/models', { model_id: 'tabular' })).status).toBe(201);
    expect((await chat({ messages: hello }, 'tabular')).status).toBe(400);
    // A file whose header reads well but which lacks a tensor the engine needs.
    const broken = tinyModel({ arch: 'llama', vocab: spmVocab(), nEmbd: 32, nLayer: 1, nHead: 2, nFf: 64, name: 'no-ffn' });
    broken.spec.tensors = (broken.spec.tensors ?? []).filter((t) => t.name !== 'blk.0.ffn_up.weight');
    writeGguf(path.join(modelsDir, 'no-ffn.gguf'), broken.spec);
    const dep = await deployLibrary(api, 'no-ffn', 'no-ffn');
    expect(dep.status).toBe('FAILED');
    expect(dep.reason).toMatch(/ffn_up/);
    const res = await chat({ messages: hello }, 'no-ffn');
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).error.message).toMatch(/failed to load/);
  });
});

describe('legacy completions, tokenize and detokenize', () => {
  it('continues a prompt; choices[0].text is the continuation only', async () => {
    const res = await api<Record<string, any>>('POST', '/v1/tiny/completions', { model: 'tiny', prompt: 'Once upon a time', max_tokens: 8, temperature: 0 });
    expect(res.status).toBe(200);
    expect(res.body.object).toBe('text_completion');
    expect(res.body.choices[0].text).not.toContain('Once upon a time');
    expect(res.body.usage.completion_tokens).toBeGreaterThan(0);
    const stream = await fetch(`${host.url}/v1/tiny/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', prompt: 'Once upon a time', max_tokens: 8, temperature: 0, stream: true }),
    });
    const text = parseSse(await stream.text())
      .slice(0, -1)
      .map((e) => (JSON.parse(e) as any).choices[0].text)
      .join('');
    expect(text).toBe(res.body.choices[0].text);
  });

  it('tokenizes and detokenizes', async () => {
    const t = await api<{ tokens: number[] }>('POST', '/api/v1/models/tiny/tokenize', { text: 'Hello world' });
    expect(t.status).toBe(200);
    expect(t.body.tokens[0]).toBe(1);
    // As llama.cpp: the space before the first word goes only when a text token comes first.
    const d = await api<{ text: string }>('POST', '/api/v1/models/tiny/detokenize', { tokens: t.body.tokens.slice(1) });
    expect(d.body.text).toBe('Hello world');
    const withBos = await api<{ text: string }>('POST', '/api/v1/models/tiny/detokenize', { tokens: t.body.tokens });
    expect(withBos.body.text).toBe(' Hello world');
    const bad = await api<{ error: { param: string } }>('POST', '/api/v1/models/tiny/detokenize', { tokens: [1, 999999] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('tokens[1]');
  });

  it.skipIf(!fs.existsSync(STORIES))('stories260K from BOS alone begins as llama.cpp does (fixture)', async () => {
    fs.copyFileSync(STORIES, path.join(modelsDir, 'stories260K.gguf'));
    const dep = await deployLibrary(api, 'stories260K.gguf', 'stories');
    expect(dep.status, dep.reason ?? '').toBe('LIVE');
    const res = await api<Record<string, any>>('POST', '/v1/stories/completions', { model: 'stories', prompt: '', max_tokens: 40, temperature: 0 });
    expect(res.body.choices[0].text).toMatch(/^Once upon a time, there was a little girl named Lily\. She loved to play outside in the park\./);
    expect((await api('DELETE', '/api/v1/library/deployments/stories')).status).toBe(204);
  });
});

describe('the official openai SDK', () => {
  const client = () => new OpenAI({ baseURL: `${host.url}/v1/tiny`, apiKey: token });

  it('reads a completion and a stream with usage', async () => {
    const done = await client().chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hello world' }], temperature: 0, max_tokens: 12 });
    expect(done.choices[0]!.message.role).toBe('assistant');
    const stream = await client().chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hello world' }], temperature: 0, max_tokens: 12, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: { completion_tokens: number } | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(done.choices[0]!.message.content);
    expect(usage?.completion_tokens).toBe(done.usage?.completion_tokens);
    const models = await client().models.list();
    expect(models.data.map((m) => m.id)).toEqual(['tiny']);
  });

  it('reads our errors as API errors with our messages', async () => {
    const err = await client()
      .chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], logit_bias: { '5': 3 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((err as Error).message).toContain('logit_bias is not supported by this server');
  });
});

describe('metrics, an instance change under load, and undeploy', () => {
  it('reports the four figures for a known workload, agreeing with the client', async () => {
    const fresh = tempDir();
    writeTinyChatModel(fresh, 'metered', { seed: 11 });
    const h = await listen(await startInProcessHost({ MODELS_DIR: fresh, LLM_CONTEXT_LENGTH: '256' }));
    try {
      const t = (await tokenFor(h)).token;
      const a = apiClient(h.url, t);
      expect((await deployLibrary(a, 'metered', 'metered')).status).toBe('LIVE');
      const clientTtft: number[] = [];
      let tokens = 0;
      for (let i = 0; i < 6; i++) {
        const started = performance.now();
        const res = await fetch(`${h.url}/v1/metered/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'metered', messages: [{ role: 'user', content: `Hello ${i}` }], max_tokens: 10, temperature: 0, stream: true, stream_options: { include_usage: true } }),
        });
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let body = '';
        let first: number | null = null;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          body += decoder.decode(value, { stream: true });
          if (first === null && /"content":"[^"]/.test(body)) first = performance.now();
        }
        if (first !== null) clientTtft.push(first - started);
        const usage = parseSse(body).slice(0, -1).map((e) => JSON.parse(e) as any).at(-1).usage;
        tokens += usage.completion_tokens;
      }
      const m = await a<any>('GET', '/api/v1/models/metered/metrics');
      expect(m.status).toBe(200);
      expect(m.body.requests_5m).toBe(6);
      expect(m.body.throughput_rpm_5m).toBeCloseTo(6 / 5);
      expect(m.body.token_throughput_tps).toBeCloseTo(tokens / 300);
      // The server's clock starts after the request arrives, the client's before it is sent.
      const meanClient = clientTtft.reduce((x, y) => x + y, 0) / clientTtft.length;
      expect(m.body.time_to_first_token_ms.mean).toBeGreaterThan(0);
      expect(m.body.time_to_first_token_ms.mean).toBeLessThanOrEqual(meanClient);
      expect(m.body.time_to_first_token_ms.p99).toBeGreaterThanOrEqual(m.body.time_to_first_token_ms.p50);
      expect(m.body.time_per_output_token_ms.mean).toBeGreaterThan(0);
      const prom = await (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${t}` } })).text();
      expect(prom).toMatch(new RegExp(`platform:generation_tokens_total\\{model="metered"\\} ${tokens}`));
      expect(prom).toContain('platform:time_to_first_token_seconds_bucket');
      expect(prom).toMatch(/platform:num_requests_running\{model="metered"\} 0/);
      expect(prom).toContain('platform:kv_cache_usage_perc');
    } finally {
      await h.close();
    }
  });

  it('moves to another instance (cpu, one thread) under load without failing a request', async () => {
    const failures: string[] = [];
    let done = 0;
    let stop = false;
    const worker = async () => {
      while (!stop) {
        const res = await chat({ messages: [{ role: 'user', content: 'Hello' }], max_tokens: 6, temperature: 0, stream: true });
        const text = await res.text();
        if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n') || text.includes('"error"')) failures.push(`${res.status} ${text.slice(0, 200)}`);
        done++;
      }
    };
    const load = Promise.all([worker(), worker(), worker()]);
    const change = await api<{ pending_instance_type: string }>('PUT', '/api/v1/library/deployments/tiny/instance-type', { instance_type: 'cpu', threads: 1 });
    expect(change.status).toBe(202);
    expect(change.body.pending_instance_type).toBe('cpu');
    for (;;) {
      const dep = await api<{ pending_instance_type: string | null; threads: number }>('GET', '/api/v1/library/deployments/tiny');
      if (dep.body.pending_instance_type === null) {
        expect(dep.body.threads).toBe(1);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    stop = true;
    await load;
    expect(failures).toEqual([]);
    expect(done).toBeGreaterThan(3);
    expect(host.app.library.instance('tiny').info.threads).toBe(1);
  });

  it('undeploy frees the model', async () => {
    expect((await api('DELETE', '/api/v1/library/deployments/tiny')).status).toBe(204);
    expect((await chat({ messages: [{ role: 'user', content: 'x' }] })).status).toBe(404);
    expect((await api('GET', '/api/v1/library/deployments/tiny')).status).toBe(404);
  });
});

describe('back-pressure', () => {
  it('beyond the queue, requests get 429 with Retry-After', async () => {
    const dir = tempDir();
    // A model large enough (~2 ms a token here) that one 100-token answer outlasts the arrival of
    // the other five requests even on a loaded machine: the tiny default finishes in ~10 ms, and
    // then the requests could be served one after another without ever filling the queue.
    writeTinyChatModel(dir, 'busy', { nEmbd: 512, nLayer: 4 });
    const h = await listen(await startInProcessHost({ MODELS_DIR: dir, LLM_CONTEXT_LENGTH: '256', LLM_MAX_RUNNING_SEQUENCES: '1', LLM_MAX_QUEUED: '1' }));
    try {
      const t = (await tokenFor(h)).token;
      const a = apiClient(h.url, t);
      expect((await deployLibrary(a, 'busy', 'busy')).status).toBe('LIVE');
      const responses = await Promise.all(
        Array.from({ length: 6 }, () =>
          fetch(`${h.url}/v1/busy/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'busy', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 100, temperature: 0.5 }),
          }),
        ),
      );
      const limited = responses.filter((r) => r.status === 429);
      expect(limited.length).toBeGreaterThan(0);
      expect(limited[0]!.headers.get('retry-after')).toBe('1');
      const limitedError = ((await limited[0]!.json()) as any).error;
      expect(limitedError.code).toBe('overloaded');
      // Said once (issue 22): the engine's own message already begins "the model is overloaded".
      expect(limitedError.message).toMatch(/^the model is overloaded: \d+ requests already wait/);
      expect(limitedError.message.match(/overloaded/g)).toHaveLength(1);
      expect(responses.filter((r) => r.status === 200).length).toBeGreaterThan(0);
      await Promise.all(responses.map((r) => r.text().catch(() => '')));
    } finally {
      await h.close();
    }
  });
});
