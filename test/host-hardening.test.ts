// The defects of issue 22 (a hostile probe of the host), each with the test that would have caught
// it, on the real host: JSON nested too deep (every body, the vector ingest worker's upsert parse,
// import lines) and a worker reply that cannot be posted; bad values described safely; an upsert
// without a body; framework and HTTP-parser errors in our error shape; path parameter limits at
// their boundaries; numbers in text only as decimal literals; credentials in URLs kept out of the
// log; the wording of two refusals; the longest token lifetime; file modes in DATA_DIR; broken and
// escaping GGUF files in `library deploy`.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import { chatMessages, samplingParams } from '../src/llm/chat/params.js';
import { engineError } from '../src/llm/chat/completion.js';
import { OverloadedError } from '../src/llm/engine/index.js';
import { checkConditions } from '../src/realtime/conditions.js';
import { describeValue, MAX_JSON_DEPTH } from '../src/validation.js';
import { postBatch, replyReader, serve, type Reply, type Request } from '../src/vectors/worker-protocol.js';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { linearModel } from './helpers/models.js';
import { tempDir } from './helpers/paths.js';

let host: TestHost;
let api: Api;
let token: string;
let modelsDir: string;

beforeAll(async () => {
  modelsDir = tempDir();
  // A file that is no GGUF model, and a .gguf link that leads out of MODELS_DIR.
  fs.writeFileSync(path.join(modelsDir, 'broken.gguf'), Buffer.concat([Buffer.from('GGUF'), crypto.randomBytes(64)]));
  fs.symlinkSync('/etc/passwd', path.join(modelsDir, 'escape.gguf'));
  host = await listen(await startInProcessHost({ MODELS_DIR: modelsDir, LOG_LEVEL: 'info' }));
  token = (await tokenFor(host)).token;
  api = apiClient(host.url, token);
  expect((await api('POST', '/api/v1/vectors/collections', { name: 'hard', dimension: 4 })).status).toBe(201);
});
afterAll(async () => {
  await host?.close();
});

interface ErrorBody {
  error: { code: string; message: string; param: string | null; type: string };
}

/** Checks the error shape of DESIGN.md section 3 and answers the error. */
function expectShape(status: number, body: unknown, expectedStatus: number, code: string): ErrorBody['error'] {
  expect(status, JSON.stringify(body)).toBe(expectedStatus);
  expect(Object.keys(body as object)).toEqual(['error']);
  const err = (body as ErrorBody).error;
  expect(Object.keys(err).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(err.code).toBe(code);
  expect(err.message.length).toBeGreaterThan(0);
  return err;
}

async function expectError(res: Response, status: number, code: string): Promise<ErrorBody['error']> {
  expect(res.headers.get('content-type')).toContain('application/json');
  return expectShape(res.status, await res.json(), status, code);
}

const deepObject = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
const deepArray = (n: number) => '['.repeat(n) + '1' + ']'.repeat(n);
const auth = () => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
const postRaw = (p: string, body: string, headers: Record<string, string> = auth()) =>
  fetch(host.url + p, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });

/** Sends raw bytes on one connection and answers everything the host wrote back until it closed. */
function rawExchange(bytes: string | Buffer, timeoutMs = 5000): Promise<string> {
  const { hostname, port } = new URL(host.url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(port), hostname, () => socket.write(bytes));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('utf8'));
    }, timeoutMs);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', (err) => {
      if ((err as NodeJS.ErrnoException).code === 'ECONNRESET') return;
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/** The HTTP/1.1 responses in a raw exchange: status and parsed JSON body of each. */
function responses(raw: string): Array<{ status: number; body: unknown }> {
  const out: Array<{ status: number; body: unknown }> = [];
  let rest = raw;
  while (rest.startsWith('HTTP/1.1 ')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    const head = rest.slice(0, headEnd);
    const status = Number(head.slice(9, 12));
    const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    const bodyText = Buffer.from(rest.slice(headEnd + 4)).subarray(0, length).toString('utf8');
    out.push({ status, body: JSON.parse(bodyText) });
    rest = Buffer.from(rest.slice(headEnd + 4)).subarray(length).toString('utf8');
  }
  return out;
}

describe('defect 1: JSON nesting depth', () => {
  it('an upsert whose properties nest 3,000 deep is a 400 naming the limit, and an upsert sent with it is answered', async () => {
    const deep = postRaw('/api/v1/vectors/upsert', `{"collection_name":"hard","vector":[{"id":"deep","values":[1,2,3,4],"properties":${deepObject(3000)}}]}`);
    const ordinary = postRaw('/api/v1/vectors/upsert', JSON.stringify({ collection_name: 'hard', vector: [{ id: 'plain', values: [1, 2, 3, 4] }] }));
    const [d, o] = await Promise.all([deep, ordinary]);
    const err = await expectError(d, 400, 'invalid_argument');
    expect(err.message).toContain(`more than ${MAX_JSON_DEPTH} levels deep`);
    expect(o.status).toBe(200);
    expect(await o.json()).toEqual({ num_affected: 1 });
  });

  it('properties nested up to the limit are stored and read back', async () => {
    // The body itself adds 3 levels (body, vector, item) above the properties' own.
    const props = JSON.parse(deepObject(MAX_JSON_DEPTH - 3));
    const res = await api('POST', '/api/v1/vectors/upsert', { collection_name: 'hard', vector: [{ id: 'at-limit', values: [1, 2, 3, 4], properties: props }] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const got = await api('GET', '/api/v1/vectors/collections/hard/at-limit');
    expect(got.status).toBe(200);
    expect(got.body.vector.properties).toEqual(props);
    const over = await api('POST', '/api/v1/vectors/upsert', { collection_name: 'hard', vector: [{ id: 'over', values: [1, 2, 3, 4], properties: JSON.parse(deepObject(MAX_JSON_DEPTH - 2)) }] });
    expectShape(over.status, over.body, 400, 'invalid_argument');
  });

  it('every JSON body is bounded: the key exchange, a search, chat, predict in pandas split', async () => {
    for (const [p, type, auth_] of [
      ['/api/v1/authentication/platform-api-key', 'application/json', false],
      ['/api/v1/vectors/search', 'application/json', true],
      ['/v1/chat/completions', 'application/json', true],
      ['/v1/none/predict', 'application/json; format=pandas-split', true],
    ] as const) {
      const headers: Record<string, string> = { 'content-type': type, ...(auth_ ? { authorization: `Bearer ${token}` } : {}) };
      for (const body of [deepObject(3000), deepArray(100_000), `{"max_tokens":${deepArray(10_000)}}`]) {
        const err = await expectError(await postRaw(p, body, headers), 400, 'invalid_argument');
        expect(err.message, p).toContain(`${MAX_JSON_DEPTH} levels`);
      }
    }
  });

  it('an import line nested too deep is a 400 naming the line', async () => {
    const exported = await fetch(`${host.url}/api/v1/vectors/export/hard`, { headers: { authorization: `Bearer ${token}` } });
    expect(exported.status).toBe(200);
    const lines = (await exported.text()).split('\n').filter(Boolean);
    const header = JSON.parse(lines[0]!);
    header.vector_count = 1;
    const vector = JSON.parse(lines[1]!);
    const body = `${JSON.stringify(header)}\n{"id":${JSON.stringify(vector.id)},"values":"${vector.values}","properties":${deepObject(3000)}}\n`;
    const sha256 = crypto.createHash('sha256').update(body).digest('hex');
    const file = `${body}${JSON.stringify({ end: true, vector_count: 1, sha256 })}\n`;
    const res = await postRaw('/api/v1/vectors/import?name=hard-copy', file, { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' });
    const err = await expectError(res, 400, 'invalid_argument');
    expect(err.message).toContain('line 2');
    expect(err.message).toContain(`${MAX_JSON_DEPTH} levels`);
  });
});

describe('defect 1: a worker message that cannot be posted or read fails only its own requests', () => {
  /** A worker's serve() on one end of a channel, the main thread's reader on the other. */
  function channel(handle: (op: string, arg: unknown) => unknown) {
    const { port1, port2 } = new MessageChannel();
    serve(port1, handle);
    const settled = new Map<number, Reply | string>();
    const reader = replyReader({
      log: () => undefined,
      settle: (reply) => settled.set(reply.id, reply),
      lose: (ids, err) => ids.forEach((id) => settled.set(id, `lost: ${err.message}`)),
    });
    port2.on('message', reader.message);
    port2.on('messageerror', reader.messageerror);
    const send = (requests: Request[], unposted: (r: Request) => void = () => undefined) =>
      postBatch(port2, requests.map((item) => ({ item, transfer: [] })), (items) => items, unposted);
    const wait = async (ids: number[]) => {
      const until = Date.now() + 5000;
      while (ids.some((id) => !settled.has(id))) {
        if (Date.now() > until) throw new Error(`unanswered: ${ids.filter((id) => !settled.has(id)).join(', ')}`);
        await new Promise((r) => setTimeout(r, 5));
      }
      return ids.map((id) => settled.get(id)!);
    };
    return { send, wait, close: () => (port1.close(), port2.close()) };
  }

  it('a reply that does not clone, or nests too deep to be read, fails its request alone', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 3000; i++) deep = { a: deep };
    const c = channel((op, arg) => {
      if (op === 'function') return () => 1; // DataCloneError when posted
      if (op === 'deep') return deep; // would overflow the receiver's stack
      if (op === 'later') return Promise.resolve(arg);
      return arg;
    });
    try {
      c.send([
        { id: 1, op: 'echo', arg: 'a' },
        { id: 2, op: 'function', arg: null },
        { id: 3, op: 'deep', arg: null },
        { id: 4, op: 'echo', arg: 'b' },
        { id: 5, op: 'later', arg: 'c' },
      ]);
      const [r1, r2, r3, r4, r5] = (await c.wait([1, 2, 3, 4, 5])) as Reply[];
      expect(r1).toEqual({ id: 1, ok: true, result: 'a' });
      expect(r4).toEqual({ id: 4, ok: true, result: 'b' });
      expect(r5).toEqual({ id: 5, ok: true, result: 'c' });
      expect(r2!.ok).toBe(false);
      expect(!r2!.ok && r2!.error.message).toMatch(/could not be sent back/);
      expect(r3!.ok).toBe(false);
      expect(!r3!.ok && r3!.error.message).toMatch(/nests more than 256 levels/);
    } finally {
      c.close();
    }
  });

  it('a request that does not clone fails alone; a batch the worker cannot read fails its requests, never hangs', async () => {
    const c = channel((_op, arg) => arg);
    try {
      const unposted: number[] = [];
      c.send(
        [
          { id: 1, op: 'echo', arg: 1 },
          { id: 2, op: 'echo', arg: () => 1 },
          { id: 3, op: 'echo', arg: 3 },
        ],
        (r) => unposted.push(r.id),
      );
      expect(unposted).toEqual([2]);
      expect(await c.wait([1, 3])).toEqual([
        { id: 1, ok: true, result: 1 },
        { id: 3, ok: true, result: 3 },
      ]);
      // Writable, but too deep for the worker's end to read: its requests are answered with errors.
      let deep: unknown = 1;
      for (let i = 0; i < 3000; i++) deep = { a: deep };
      c.send([
        { id: 10, op: 'echo', arg: deep },
        { id: 11, op: 'echo', arg: 'x' },
      ]);
      c.send([{ id: 12, op: 'echo', arg: 'after' }]);
      const [r10, r11, r12] = (await c.wait([10, 11, 12])) as Reply[];
      expect(r10!.ok || r11!.ok).toBe(false);
      expect(!r10!.ok && r10!.error.message).toMatch(/could not be read by the worker/);
      expect(r12).toEqual({ id: 12, ok: true, result: 'after' });
    } finally {
      c.close();
    }
  });
});

describe('defect 5: bad values are described in bounded messages', () => {
  let deep: unknown = 1;
  for (let i = 0; i < 10_000; i++) deep = [deep];
  let deepObj: unknown = 1;
  for (let i = 0; i < 10_000; i++) deepObj = { a: deepObj };

  const refusal = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(400);
      expect((err as ApiError).message.length).toBeLessThan(400);
      return (err as ApiError).message;
    }
    throw new Error('not refused');
  };

  it('describeValue never walks a whole value', () => {
    expect(describeValue(deep).length).toBeLessThan(80);
    expect(describeValue(deepObj).length).toBeLessThan(80);
    expect(describeValue('x'.repeat(10_000_000)).length).toBeLessThan(80);
    expect(describeValue(Array.from({ length: 1_000_000 }, (_, i) => i)).length).toBeLessThan(80);
    expect(describeValue('abc')).toBe('"abc"');
    expect(describeValue(12)).toBe('12');
    expect(describeValue({ a: [1, 2] })).toBe('{"a":[1,2]}');
  });

  it('max_tokens, temperature, messages[].role and an audience operator nested 10k deep are 400s', () => {
    expect(refusal(() => samplingParams({ max_tokens: deep }))).toMatch(/^max_tokens must be a number, got \[\[/);
    expect(refusal(() => samplingParams({ temperature: deepObj }))).toMatch(/^temperature must be a number/);
    expect(refusal(() => chatMessages([{ role: deep, content: 'hi' }]))).toMatch(/role must be/);
    expect(refusal(() => checkConditions({ unary: [{ key: 'x-user', operator: deepObj }] }, 'audiences[0].conditions'))).toMatch(/operator/);
    expect(refusal(() => checkConditions({ binary: [{ key: 'x-user', operator: 'BINARY_OPERATOR_TYPE_RANGE_MATCH', first_operand: deep, second_operand: 1 }] }, 'c'))).toMatch(
      /first_operand must be an integer/,
    );
  });
});

describe('defect 6: an upsert with no body and no Content-Type', () => {
  it('is a 400 in the error shape', async () => {
    const res = await fetch(`${host.url}/api/v1/vectors/upsert`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    const err = await expectError(res, 400, 'invalid_argument');
    expect(err.message).toMatch(/empty/);
    const empty = await fetch(`${host.url}/api/v1/vectors/upsert`, { method: 'POST', headers: auth(), body: '' });
    await expectError(empty, 400, 'invalid_argument');
  });

  it('so is an import with no body', async () => {
    const res = await fetch(`${host.url}/api/v1/vectors/import`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(Object.keys((await res.json()) as object)).toEqual(['error']);
  });
});

describe('defect 7: framework and HTTP parser errors in our error shape', () => {
  it('bad percent-encoding: %zz and an overlong %c0%af are 400s', async () => {
    for (const bad of ['%zz', '%c0%af', 'a%', '%ff']) {
      const res = await fetch(`${host.url}/api/v1/vectors/collections/${bad}`, { headers: { authorization: `Bearer ${token}` } });
      const err = await expectError(res, 400, 'invalid_argument');
      expect(err.message).toMatch(/URL is not valid/);
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('a path parameter past the limit is a 414', async () => {
    const res = await fetch(`${host.url}/api/v1/vectors/collections/${'a'.repeat(3073)}`, { headers: { authorization: `Bearer ${token}` } });
    const err = await expectError(res, 414, 'uri_too_long');
    expect(err.message).toContain('3072');
  });

  it('headers larger than the limit are a 431', async () => {
    const raw = await rawExchange(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const [only, ...more] = responses(raw);
    expect(more).toEqual([]);
    const err = expectShape(only!.status, only!.body, 431, 'headers_too_large');
    expect(err.message).toContain('bytes');
  });

  it('a URL larger than the header limit is a 431 too', async () => {
    const raw = await rawExchange(`GET /healthz?${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const [only] = responses(raw);
    expectShape(only!.status, only!.body, 431, 'headers_too_large');
  });

  it('a Content-Length shorter than the body: the request is answered, then the rest is a 400, each in the shape', async () => {
    const request = (body: string) =>
      `POST /api/v1/authentication/platform-api-key HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n${body}\r\n\r\n`;
    // The first two bytes are a whole body ({} lacks platformApiKey); the rest is no request.
    const answers = responses(await rawExchange(request('{}{"platformApiKey":"psk_0000000000000000_x"}')));
    expect(answers.length).toBe(2);
    expectShape(answers[0]!.status, answers[0]!.body, 400, 'invalid_argument');
    expect((answers[0]!.body as ErrorBody).error.param).toBe('platformApiKey');
    const err = expectShape(answers[1]!.status, answers[1]!.body, 400, 'invalid_argument');
    expect(err.message).toMatch(/not valid HTTP/);
    // The first two bytes are no JSON: that 400 closes the connection, and nothing else is written.
    const cut = responses(await rawExchange(request('{"platformApiKey":"psk_0000000000000000_x"}')));
    expect(cut.length).toBe(1);
    expect(expectShape(cut[0]!.status, cut[0]!.body, 400, 'invalid_argument').message).toMatch(/not valid JSON/);
  });

  it('bytes that are no HTTP request at all are a 400 in the shape', async () => {
    const [only] = responses(await rawExchange('\x00\x01garbage\r\n\r\n'));
    expectShape(only!.status, only!.body, 400, 'invalid_argument');
  });
});

describe('defect 4: path parameter limits agree with the resources', () => {
  it('vector ids of 256 characters (any characters) can be upserted and fetched; 257 cannot be upserted', async () => {
    const ids = ['i'.repeat(256), 'é'.repeat(256), '😀'.repeat(128), `${'/?#%'.repeat(64)}`];
    for (const id of ids) {
      expect(id.length).toBe(256);
      const up = await api('POST', '/api/v1/vectors/upsert', { collection_name: 'hard', vector: [{ id, values: [1, 2, 3, 4] }] });
      expect(up.status, JSON.stringify(up.body)).toBe(200);
      const got = await api('GET', `/api/v1/vectors/collections/hard/${encodeURIComponent(id)}`);
      expect(got.status, JSON.stringify(got.body)).toBe(200);
      expect(got.body.vector.id).toBe(id);
    }
    const long = 'i'.repeat(257);
    const up = await api('POST', '/api/v1/vectors/upsert', { collection_name: 'hard', vector: [{ id: long, values: [1, 2, 3, 4] }] });
    expectShape(up.status, up.body, 400, 'invalid_argument');
    // Read: a 400 naming the id's limit, never a 414.
    const got = await api('GET', `/api/v1/vectors/collections/hard/${encodeURIComponent('😀'.repeat(129))}`);
    expect(expectShape(got.status, got.body, 400, 'invalid_argument').message).toContain('at most 256');
  });

  it('collection names of 128 characters can be created, read and deleted; 129 cannot be created', async () => {
    const name = `c${'x'.repeat(127)}`;
    expect((await api('POST', '/api/v1/vectors/collections', { name, dimension: 2 })).status).toBe(201);
    expect((await api('GET', `/api/v1/vectors/collections/${name}`)).status).toBe(200);
    expect((await api('DELETE', `/api/v1/vectors/collections/${name}`)).status).toBe(200);
    const tooLong = await api('POST', '/api/v1/vectors/collections', { name: `${name}x`, dimension: 2 });
    expectShape(tooLong.status, tooLong.body, 400, 'invalid_argument');
    expect((await api('GET', `/api/v1/vectors/collections/${name}x`)).status).toBe(404);
  });

  it('the parameter limit itself: 3,072 characters are routed (a 400 on the id), 3,073 are a 414', async () => {
    const routed = await api('GET', `/api/v1/vectors/collections/hard/${'a'.repeat(3072)}`);
    expect(expectShape(routed.status, routed.body, 400, 'invalid_argument').message).toContain('at most 256');
    const long = await api('GET', `/api/v1/vectors/collections/hard/${'a'.repeat(3073)}`);
    expectShape(long.status, long.body, 414, 'uri_too_long');
    const name = await api('GET', `/api/v1/vectors/collections/${'a'.repeat(3072)}`);
    expect(name.status).toBe(404);
  });
});

describe('defect 10: numbers in text only as decimal literals', () => {
  beforeAll(async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'lin' })).status).toBe(201);
    const build = await api<{ build_id: string }>('POST', '/api/v1/models/lin/builds?feature_names=a,b', linearModel(['a', 'b'], 1));
    expect(build.status, JSON.stringify(build.body)).toBe(201);
    const dep = await api<{ deployment_id: string }>('POST', '/api/v1/models/lin/deployments', { build_id: build.body.build_id });
    expect(dep.status).toBe(202);
    expect((await waitForDeployment(api, dep.body.deployment_id)).status).toBe('LIVE');
  });

  it('a query string number: 0x10 and " 7 " are 400s naming the field; 16 works', async () => {
    for (const bad of ['0x10', '%207%20', '1e', 'Infinity', '0b1']) {
      const res = await api('GET', `/api/v1/models/lin/logs?limit=${bad}`);
      const err = expectShape(res.status, res.body, 400, 'invalid_argument');
      expect(err.param).toBe('limit');
    }
    expect((await api('GET', '/api/v1/models/lin/logs?limit=16')).status).toBe(200);
  });

  it('a predict cell given as text: "7" is 7, "0x10" and " 7 " are refused', async () => {
    const ok = await api('POST', '/v1/lin/predict', { columns: ['a', 'b'], data: [['7', '-0.5e1']] });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    for (const cell of ['0x10', ' 7 ', 'Infinity', '']) {
      const res = await api('POST', '/v1/lin/predict', { columns: ['a', 'b'], data: [[cell, 1]] });
      const err = expectShape(res.status, res.body, 400, 'invalid_argument');
      expect(err.message).toMatch(/not a number/);
    }
  });

  it('a predict cell nested deep is a 400 with a bounded message', async () => {
    const cell = JSON.parse(deepArray(50));
    const res = await api('POST', '/v1/lin/predict', { columns: ['a', 'b'], data: [[cell, 1]] });
    const err = expectShape(res.status, res.body, 400, 'invalid_argument');
    expect(err.message.length).toBeLessThan(200);
  });

  it('chat parameters given as text', () => {
    expect(samplingParams({ max_tokens: '16' }).maxTokens).toBe(16);
    for (const bad of ['0x10', ' 7 ', '1_0']) expect(() => samplingParams({ max_tokens: bad })).toThrow(/must be a number/);
    expect(() => samplingParams({ n: '0x1' })).toThrow(/\bn\b/);
  });
});

describe('defect 11: credentials in a URL never reach the log', () => {
  it('a token or key in the query string is refused and redacted in the log', async () => {
    const secretKey = `psk_${'0'.repeat(16)}_${'s'.repeat(43)}`;
    const res = await fetch(`${host.url}/api/v1/engine?token=${token}&access_token=plain-secret-value&api_key=${secretKey}&name=visible`);
    await expectError(res, 401, 'unauthenticated');
    await new Promise((r) => setTimeout(r, 50));
    const logged = host.logs.join('');
    expect(logged).toContain('/api/v1/engine?token=[redacted]');
    expect(logged).toContain('name=visible');
    expect(logged).not.toContain(token);
    expect(logged).not.toContain('plain-secret-value');
    expect(logged).not.toContain(secretKey);
  });
});

describe('defect 12: wording', () => {
  it('a validly signed token whose subject is no key says the key does not exist', async () => {
    const forged = await host.app.tokens.issue('ffffffffffffffff');
    const res = await fetch(`${host.url}/api/v1/engine`, { headers: { authorization: `Bearer ${forged.accessToken}` } });
    const err = await expectError(res, 401, 'unauthenticated');
    expect(err.message).toBe('the API key behind this token does not exist');
    const revoked = await tokenFor(host, 'to-revoke');
    await host.app.keys.revoke(revoked.keyId);
    const res2 = await fetch(`${host.url}/api/v1/engine`, { headers: { authorization: `Bearer ${revoked.token}` } });
    expect((await expectError(res2, 401, 'unauthenticated')).message).toBe('the API key behind this token was revoked');
  });

  it('the 429 of a full queue says "overloaded" once', () => {
    const err = engineError(new OverloadedError('the model is overloaded: 1 requests already wait (maxQueued)')) as ApiError;
    expect(err.status).toBe(429);
    expect(err.message).toBe('the model is overloaded: 1 requests already wait (maxQueued); retry shortly');
  });
});

describe('defect 13: the longest token lifetime', () => {
  async function signed(claims: { iat: number; exp: number }, keyId: string): Promise<string> {
    const secret = new TextEncoder().encode(fs.readFileSync(path.join(host.config.dataDir, 'token-secret'), 'utf8').trim());
    return new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer('model-serving-platform')
      .setSubject(keyId)
      .setIssuedAt(claims.iat)
      .setExpirationTime(claims.exp)
      .sign(secret);
  }

  it('refuses a validly signed token whose exp is more than 24 hours after its iat, or whose iat is in the future', async () => {
    const { keyId } = await tokenFor(host, 'lifetime');
    const now = Math.floor(Date.now() / 1000);
    const tenYears = await signed({ iat: now, exp: now + 10 * 365 * 86400 }, keyId);
    const res = await fetch(`${host.url}/api/v1/engine`, { headers: { authorization: `Bearer ${tenYears}` } });
    expect((await expectError(res, 401, 'unauthenticated')).message).toMatch(/longer than the maximum of 86400 seconds/);
    const future = await signed({ iat: now + 3600, exp: now + 7200 }, keyId);
    await expectError(await fetch(`${host.url}/api/v1/engine`, { headers: { authorization: `Bearer ${future}` } }), 401, 'unauthenticated');
    // Exactly 24 hours: accepted.
    const day = await signed({ iat: now, exp: now + 86400 }, keyId);
    expect((await fetch(`${host.url}/api/v1/engine`, { headers: { authorization: `Bearer ${day}` } })).status).toBe(200);
  });
});

describe('defect 3: library deploy of a broken or escaping GGUF', () => {
  it('a file that is no GGUF model is a 400 with the reader\'s message', async () => {
    const res = await api('POST', '/api/v1/library/deployments', { name: 'broken.gguf', model_id: 'broken' });
    const err = expectShape(res.status, res.body, 400, 'invalid_argument');
    expect(err.message).toMatch(/^"broken.gguf" is not a GGUF model this host can read: /);
    expect(err.param).toBe('name');
  });

  it('a .gguf symlink that leads out of MODELS_DIR is a 400 naming the file', async () => {
    const res = await api('POST', '/api/v1/library/deployments', { name: 'escape.gguf', model_id: 'escape' });
    const err = expectShape(res.status, res.body, 400, 'invalid_argument');
    expect(err.message).toContain('"escape.gguf" is a symbolic link that leads outside MODELS_DIR');
    expect(err.message).not.toContain('/etc/passwd');
  });
});

describe('defect 8: files in DATA_DIR are 0600 and folders 0700', () => {
  it('whoever made DATA_DIR and whatever the umask', async () => {
    const dataDir = tempDir();
    fs.chmodSync(dataDir, 0o755);
    const umask = process.umask(0o022);
    let h: TestHost | undefined;
    try {
      h = await listen(await startInProcessHost({ DATA_DIR: dataDir, LOG_LEVEL: 'warn' }));
      const a = apiClient(h.url, (await tokenFor(h)).token);
      expect((await a('POST', '/api/v1/vectors/collections', { name: 'modes', dimension: 2 })).status).toBe(201);
      expect((await a('POST', '/api/v1/vectors/upsert', { collection_name: 'modes', vector: [{ id: 'a', values: [1, 2] }] })).status).toBe(200);
      expect((await a('POST', '/api/v1/models', { model_id: 'm' })).status).toBe(201);
      const build = await a<{ build_id: string }>('POST', '/api/v1/models/m/builds?feature_names=a,b', linearModel(['a', 'b'], 1));
      expect(build.status).toBe(201);
      const dep = await a<{ deployment_id: string }>('POST', '/api/v1/models/m/deployments', { build_id: build.body.build_id });
      expect((await waitForDeployment(a, dep.body.deployment_id)).status).toBe('LIVE');
      expect((await a('POST', '/v1/m/predict', { columns: ['a', 'b'], data: [[1, 2]] })).status).toBe(200);
    } finally {
      await h?.close(); // writes the vector checkpoints
      process.umask(umask);
    }
    const wrong: string[] = [];
    const walk = (p: string) => {
      const st = fs.lstatSync(p);
      const mode = st.mode & 0o777;
      if (st.isDirectory()) {
        if (mode !== 0o700) wrong.push(`${p} ${mode.toString(8)}`);
        for (const e of fs.readdirSync(p)) walk(path.join(p, e));
      } else if (mode !== 0o600) wrong.push(`${p} ${mode.toString(8)}`);
    };
    walk(dataDir);
    expect(wrong).toEqual([]);
    const names = fs.readdirSync(dataDir);
    expect(names).toEqual(expect.arrayContaining(['platform.db', 'request-log.db', 'token-secret']));
  });
});
