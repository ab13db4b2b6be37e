// Embeddings through the real host: BERT-family GGUF files (bert, nomic-bert) deployed from
// MODELS_DIR as library models, POST /v1/<id>/embeddings and the root POST /v1/embeddings with
// every input form, base64, dimensions, usage and the OpenAI answer shape, checked against the
// f64 reference of test/helpers/bert-model.ts; the official openai SDK; bad inputs as 400s naming
// the field; chat on an embedding model refused, embeddings of a chat model by last-token pooling
// (against the f64 decoder reference of test/helpers/llm-reference.ts); the catalogue and
// `platform library list` saying which files embed.
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tokenizer } from '../src/llm/tokenizer/index.js';
import { runCli } from './helpers/cli.js';
import { tokenFor, type TestHost } from './helpers/in-process-host.js';
import { libraryHost } from './helpers/library.js';
import { spmVocab } from './helpers/llm-models.js';
import { referenceHidden, referenceModel, relativeError, type ReferenceModel } from './helpers/llm-reference.js';
import { bertModel, CLS, maxAbsDiff, referenceEmbedding, SEP, type BertModel } from './helpers/bert-model.js';
import { writeGguf } from './helpers/gguf-writer.js';

let host: TestHost;
let token: string;
let bert: BertModel;
let nomic: BertModel;
let chat: ReferenceModel;
let tokenizer: Tokenizer;
let modelsDir = '';

const CTX = 32;

beforeAll(async () => {
  bert = bertModel({ arch: 'bert', nEmbd: 64, nLayer: 2, nHead: 4, nFf: 128, nCtx: CTX, pooling: 'mean', seed: 31, name: 'tiny-bert' });
  chat = referenceModel({ arch: 'llama', vocab: spmVocab(), nEmbd: 64, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 128, nCtx: 512, seed: 3, name: 'tiny-chat', weightScale: 0.3 });
  nomic = bertModel({ arch: 'nomic-bert', nEmbd: 64, nLayer: 2, nHead: 4, nFf: 128, nCtx: CTX, pooling: 'cls', seed: 32, name: 'tiny-nomic' });
  ({ host, token } = await libraryHost((dir) => {
    modelsDir = dir;
    writeGguf(path.join(dir, 'tiny-bert.gguf'), bert.spec);
    writeGguf(path.join(dir, 'tiny-nomic.gguf'), nomic.spec);
    writeGguf(path.join(dir, 'tiny-chat.gguf'), chat.model.spec);
    return { bert: 'tiny-bert.gguf', nomic: 'tiny-nomic.gguf', tiny: 'tiny-chat.gguf' };
  }));
  tokenizer = await Tokenizer.fromFile(path.join(modelsDir, 'tiny-bert.gguf'));
}, 60_000);
afterAll(async () => {
  await host?.close();
});

async function post(route: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${host.url}${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const expectRef = (got: ArrayLike<number>, model: BertModel, ids: number[]) => expect(maxAbsDiff(got, referenceEmbedding(model.config, model.weights, ids))).toBeLessThan(1e-5);

describe('POST /v1/<model_id>/embeddings and /v1/embeddings', () => {
  it('a string: the OpenAI answer, the reference vector of [CLS] text [SEP], usage', async () => {
    const ids = tokenizer.encode('Hello world');
    expect(ids).toEqual([CLS, tokenizer.tokenId('▁hello'), tokenizer.tokenId('▁world'), SEP]);
    for (const route of ['/v1/bert/embeddings', '/v1/embeddings']) {
      const res = await post(route, { model: 'bert', input: 'Hello world' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ object: 'list', model: 'bert', usage: { prompt_tokens: 4, total_tokens: 4 } });
      expect(res.body.data).toHaveLength(1);
      expect(res.body.data[0]).toMatchObject({ object: 'embedding', index: 0 });
      expect(res.body.data[0].embedding).toHaveLength(64);
      expectRef(res.body.data[0].embedding, bert, ids);
    }
  });

  it('an array of strings, an array of token ids, an array of token arrays', async () => {
    const texts = ['The dog runs.', 'unbelievable', '中文 🙂'];
    const strings = await post('/v1/embeddings', { model: 'bert', input: texts });
    expect(strings.status).toBe(200);
    const ids = texts.map((t) => tokenizer.encode(t));
    expect(strings.body.usage.prompt_tokens).toBe(ids.reduce((s, x) => s + x.length, 0));
    strings.body.data.forEach((d: any, i: number) => {
      expect(d.index).toBe(i);
      expectRef(d.embedding, bert, ids[i]!);
    });
    // Token ids are taken as given (no [CLS] / [SEP] added): the same vector as the text's.
    const one = await post('/v1/bert/embeddings', { model: 'bert', input: ids[0] });
    expect(one.body.data).toHaveLength(1);
    expect(maxAbsDiff(one.body.data[0].embedding, strings.body.data[0].embedding)).toBeLessThan(1e-6);
    const many = await post('/v1/bert/embeddings', { model: 'bert', input: [ids[1], [CLS, 40, SEP]] });
    expect(many.body.usage.prompt_tokens).toBe(ids[1]!.length + 3);
    expectRef(many.body.data[1].embedding, bert, [CLS, 40, SEP]);
  });

  it('encoding_format base64 decodes to the same float32 values', async () => {
    const floats = await post('/v1/embeddings', { model: 'bert', input: ['a b c', 'hello'] });
    const b64 = await post('/v1/embeddings', { model: 'bert', input: ['a b c', 'hello'], encoding_format: 'base64' });
    expect(b64.status).toBe(200);
    b64.body.data.forEach((d: any, i: number) => {
      expect(typeof d.embedding).toBe('string');
      const bytes = Buffer.from(d.embedding, 'base64');
      const v = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
      expect(Array.from(v)).toEqual(floats.body.data[i].embedding);
    });
  });

  it('dimensions: the full width anywhere; fewer (cut and renormalized) only on nomic-bert', async () => {
    const full = await post('/v1/embeddings', { model: 'bert', input: 'hello', dimensions: 64 });
    expect(full.status).toBe(200);
    const fewer = await post('/v1/embeddings', { model: 'bert', input: 'hello', dimensions: 16 });
    expect(fewer.status).toBe(400);
    expect(fewer.body.error).toMatchObject({ param: 'dimensions', message: expect.stringContaining('model "bert" (bert) gives only its full 64 dimensions') });
    const nomicFull = await post('/v1/nomic/embeddings', { model: 'nomic', input: 'hello world' });
    const nomic16 = await post('/v1/nomic/embeddings', { model: 'nomic', input: 'hello world', dimensions: '16' });
    expect(nomic16.status).toBe(200);
    const v = nomic16.body.data[0].embedding as number[];
    expect(v).toHaveLength(16);
    expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    const head = (nomicFull.body.data[0].embedding as number[]).slice(0, 16);
    const n = Math.hypot(...head);
    expect(maxAbsDiff(v, head.map((x) => x / n))).toBeLessThan(1e-6);
    expectRef(nomicFull.body.data[0].embedding, nomic, tokenizer.encode('hello world'));
    expect((await post('/v1/nomic/embeddings', { model: 'nomic', input: 'x', dimensions: 65 })).body.error.message).toBe('dimensions is 65, more than model "nomic" gives (64)');
    expect((await post('/v1/nomic/embeddings', { model: 'nomic', input: 'x', dimensions: 0 })).body.error.param).toBe('dimensions');
  });

  it('the official openai SDK, on the root and the per-model base URL', async () => {
    for (const baseURL of [`${host.url}/v1`, `${host.url}/v1/bert`]) {
      const client = new OpenAI({ baseURL, apiKey: token, maxRetries: 0 });
      const res = await client.embeddings.create({ model: 'bert', input: ['Hello world', 'once upon a time'] });
      expect(res.object).toBe('list');
      expect(res.data.map((d) => d.index)).toEqual([0, 1]);
      expectRef(res.data[0]!.embedding, bert, tokenizer.encode('Hello world'));
      expect(res.usage.prompt_tokens).toBe(tokenizer.encode('Hello world').length + tokenizer.encode('once upon a time').length);
      // The SDK asks for base64 by default when no encoding_format is given, and decodes it.
      const b64 = await client.embeddings.create({ model: 'bert', input: 'Hello world', encoding_format: 'base64' });
      expect(typeof b64.data[0]!.embedding).toBe('string');
    }
  });
});

describe('refusals, each a 400 naming the field', () => {
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['an empty string', { input: '' }, 'input', 'input must not be an empty string'],
    ['an empty array', { input: [] }, 'input', 'input must not be an empty array'],
    ['an empty string in a list', { input: ['a', ''] }, 'input', 'input[1] must not be an empty string'],
    ['an empty token array', { input: [[]] }, 'input', 'input[0] must not be an empty array of token ids'],
    ['a token id out of range', { input: [[CLS, 5000, SEP]] }, 'input', 'input[0][1] = 5000 is not a token id of this model'],
    ['a negative token id', { input: [2, -1] }, 'input', 'input[1] = -1 is not a token id'],
    ['a mixed list', { input: ['a', 3] }, 'input', 'input[1] must be a string or an array of token ids, got number'],
    ['a too long text', { input: 'word '.repeat(40) }, 'input', `input is 82 tokens, more than model "bert" takes (${CTX})`],
    ['a too long token list', { input: ['ok', new Array(CTX + 1).fill(40)] }, 'input', `input[1] is ${CTX + 1} tokens, more than model "bert" takes (${CTX})`],
    ['one too long token-id input', { input: new Array(CTX + 2).fill(40) }, 'input', `input is ${CTX + 2} tokens, more than model "bert" takes (${CTX})`],
    ['a wrong input type', { input: 7 }, 'input', ''],
    ['an unknown encoding', { input: 'x', encoding_format: 'int8' }, 'encoding_format', 'encoding_format must be "float" or "base64", got "int8"'],
    ['a bad dimensions', { input: 'x', dimensions: 'many' }, 'dimensions', 'dimensions must be a positive integer, got "many"'],
  ];
  for (const [what, body, param, message] of cases) {
    it(what, async () => {
      const res = await post('/v1/bert/embeddings', { model: 'bert', ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_argument', param });
      expect(res.body.error.message).toContain(message);
    });
  }

  it('too many inputs', async () => {
    const res = await post('/v1/embeddings', { model: 'bert', input: new Array(2049).fill('a') });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe('input has 2049 items; at most 2048 per request');
  });

  it('the model of the body must be the URL model; unknown models are 404', async () => {
    expect((await post('/v1/bert/embeddings', { model: 'nomic', input: 'x' })).body.error.message).toBe('the model in the body ("nomic") is not the model in the URL ("bert")');
    expect((await post('/v1/bert/embeddings', { input: 'x' })).body.error.param).toBe('model');
    expect((await post('/v1/embeddings', { model: 'nobody', input: 'x' })).status).toBe(404);
  });

  it('chat or completions on an embedding model: a 400 saying to use embeddings', async () => {
    for (const [route, body] of [
      ['/v1/bert/chat/completions', { model: 'bert', messages: [{ role: 'user', content: 'hi' }] }],
      ['/v1/chat/completions', { model: 'bert', messages: [{ role: 'user', content: 'hi' }] }],
      ['/v1/bert/completions', { model: 'bert', prompt: 'hi' }],
    ] as const) {
      const res = await post(route, body);
      expect(res.status, route).toBe(400);
      expect(res.body.error).toMatchObject({ param: 'model', message: 'model "bert" is an embedding model: use POST /v1/bert/embeddings (or POST /v1/embeddings), not chat or completions' });
    }
  });

  it('embeddings of a chat model: last-token pooling, equal to the f64 decoder reference (1e-4)', async () => {
    const chatTokenizer = await Tokenizer.fromFile(path.join(modelsDir, 'tiny-chat.gguf'));
    const lastToken = (ids: number[]) => {
      const h = referenceHidden(chat.config, chat.weights, ids).at(-1)!;
      const n = Math.sqrt(h.reduce((a, v) => a + v * v, 0));
      return h.map((v) => v / n);
    };
    const inputs: Array<string | number[]> = ['Once upon a time', [1, 40, 41, 42, 43], 'Hello world'];
    const ids = inputs.map((x) => (typeof x === 'string' ? chatTokenizer.encode(x, { addSpecial: true }) : x));
    expect(ids[0]![0]).toBe(1); // BOS, as the file says
    for (const route of ['/v1/tiny/embeddings', '/v1/embeddings']) {
      const res = await post(route, { model: 'tiny', input: inputs });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.usage).toEqual({ prompt_tokens: ids.flat().length, total_tokens: ids.flat().length });
      res.body.data.forEach((d: { index: number; embedding: number[] }, i: number) => {
        expect(d.index).toBe(i);
        expect(d.embedding).toHaveLength(64);
        expect(relativeError(d.embedding, lastToken(ids[i]!))).toBeLessThan(1e-4);
      });
    }
    // Fewer dimensions are not served (a decoder is not trained for truncation), and a long input is named.
    expect((await post('/v1/tiny/embeddings', { model: 'tiny', input: 'hi', dimensions: 32 })).body.error.param).toBe('dimensions');
    const long = await post('/v1/tiny/embeddings', { model: 'tiny', input: ['ok', Array.from({ length: 600 }, () => 40)] });
    expect(long.status).toBe(400);
    expect(long.body.error).toMatchObject({ param: 'input', message: expect.stringContaining('input[1] is 600 tokens') });
  });
});

describe('the library says which files embed', () => {
  it('GET /api/v1/library: serves embeddings or chat; tokenize works on a WordPiece model', async () => {
    const res = await fetch(`${host.url}/api/v1/library`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await res.json()) as { models: Array<{ file: string; architecture: string; serves: string }> };
    const byFile = Object.fromEntries(body.models.map((m) => [m.file, m]));
    expect(byFile['tiny-bert.gguf']).toMatchObject({ architecture: 'bert', serves: 'embeddings' });
    expect(byFile['tiny-nomic.gguf']).toMatchObject({ architecture: 'nomic-bert', serves: 'embeddings' });
    expect(byFile['tiny-chat.gguf']).toMatchObject({ architecture: 'llama', serves: 'chat' });
    const tok = await post('/api/v1/models/bert/tokenize', { text: 'Hello world' });
    expect(tok.body.tokens).toEqual(tokenizer.encode('Hello world'));
  });

  it('platform library list shows a SERVES column', async () => {
    const { key } = await tokenFor(host, 'cli');
    const list = await runCli(['library', 'list'], { PLATFORM_URL: host.url, PLATFORM_API_KEY: key });
    expect(list.code, list.stderr).toBe(0);
    const line = (file: string) => list.stdout.split('\n').find((l) => l.includes(file)) ?? '';
    expect(list.stdout).toMatch(/^NAME\s+FILE\s+SIZE\s+ARCH\s+PARAMS\s+QUANT\s+CONTEXT\s+LICENCE\s+SERVES/);
    expect(line('tiny-bert.gguf')).toMatch(/\bbert\b.*\bembeddings\s*$/);
    expect(line('tiny-chat.gguf')).toMatch(/\bchat\s*$/);
  });
});

describe('an embedding deployment while it serves', () => {
  const api = (method: string, route: string, body?: unknown) =>
    fetch(`${host.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }).then(async (r) => ({ status: r.status, body: r.status === 204 ? null : ((await r.json()) as any) }));

  it('changes its thread count under load without a failed request, then undeploys', async () => {
    let stop = false;
    let done = 0;
    const failures: string[] = [];
    const expected = referenceEmbedding(nomic.config, nomic.weights, tokenizer.encode('hello world'));
    const worker = async () => {
      while (!stop) {
        const res = await post('/v1/embeddings', { model: 'nomic', input: ['hello world', 'the dog'] });
        if (res.status !== 200 || maxAbsDiff(res.body.data[0].embedding, expected) > 1e-5) failures.push(`${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        done++;
      }
    };
    const load = Promise.all([worker(), worker(), worker()]);
    const change = await api('PUT', '/api/v1/library/deployments/nomic/instance-type', { instance_type: 'cpu', threads: 1 });
    expect(change.status, JSON.stringify(change.body)).toBe(202);
    for (;;) {
      const dep = await api('GET', '/api/v1/library/deployments/nomic');
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
    expect(host.app.library.instance('nomic').embedder?.info.threads).toBe(1);
    expect((await api('DELETE', '/api/v1/library/deployments/nomic')).status).toBe(204);
    expect((await post('/v1/embeddings', { model: 'nomic', input: 'x' })).status).toBe(404);
  });
});

describe('modelsDir', () => {
  it('holds the three files', () => {
    expect(fs.readdirSync(modelsDir).sort()).toEqual(['tiny-bert.gguf', 'tiny-chat.gguf', 'tiny-nomic.gguf']);
  });
});
