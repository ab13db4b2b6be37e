// The error shape of DESIGN.md section 3 on every failure path: unknown routes, malformed JSON,
// wrong content type, oversized and empty bodies, validation failures and internal errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';

let host: TestHost;
const TOKEN_PATH = '/api/v1/authentication/platform-api-key';

beforeAll(async () => {
  host = await startInProcessHost({ MAX_BODY_BYTES: '2048' });
  // A route that fails the way a bug would: its error carries a filesystem path and a stack.
  host.app.server.get('/api/v1/test-internal-error', async () => {
    throw new Error('ENOENT: no such file or directory, open /secret/place/model.bin');
  });
  await listen(host);
});
afterAll(async () => {
  await host.close();
});

interface ErrorBody {
  error: { code: string; message: string; param: string | null; type: string };
}

async function expectError(res: Response, status: number, code: string): Promise<ErrorBody['error']> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/json');
  const body = (await res.json()) as ErrorBody;
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
  return body.error;
}

const post = (path: string, body: string | Uint8Array, contentType = 'application/json') =>
  fetch(host.url + path, { method: 'POST', headers: { 'content-type': contentType }, body });

describe('error shape', () => {
  it('unknown route: 404 with the method and path', async () => {
    const err = await expectError(await fetch(`${host.url}/no/such/route`), 404, 'not_found');
    expect(err.message).toBe('no route GET /no/such/route');
    expect(err.type).toBe('invalid_request_error');
    await expectError(await post('/v1/x/unknown', '{}'), 404, 'not_found');
  });

  it('malformed JSON: 400', async () => {
    const err = await expectError(await post(TOKEN_PATH, '{"platformApiKey": '), 400, 'invalid_argument');
    expect(err.message).toMatch(/not valid JSON/);
  });

  it('empty JSON body: 400', async () => {
    const err = await expectError(await post(TOKEN_PATH, ''), 400, 'invalid_argument');
    expect(err.message).toMatch(/empty/);
  });

  it('JSON that is not an object: 400 naming the body', async () => {
    const err = await expectError(await post(TOKEN_PATH, '[1,2]'), 400, 'invalid_argument');
    expect(err.message).toMatch(/body/);
  });

  it('wrong content type: 415', async () => {
    const err = await expectError(await post(TOKEN_PATH, 'platformApiKey=x', 'application/x-www-form-urlencoded'), 415, 'unsupported_media_type');
    expect(err.message).toContain('application/x-www-form-urlencoded');
    await expectError(await post(TOKEN_PATH, '{"platformApiKey":"x"}', 'text/plain'), 415, 'unsupported_media_type');
  });

  it('oversized body: 413 stating the limit', async () => {
    const big = JSON.stringify({ platformApiKey: 'x'.repeat(4096) });
    const err = await expectError(await post(TOKEN_PATH, big), 413, 'payload_too_large');
    expect(err.message).toContain('2048 bytes');
  });

  it('validation failure: 400 naming the field', async () => {
    const err = await expectError(await post(TOKEN_PATH, JSON.stringify({ platformApiKey: ['a'] })), 400, 'invalid_argument');
    expect(err.param).toBe('platformApiKey');
    expect(err.message).toBe('field "platformApiKey" must be string');
  });

  it('numbers are not coerced to strings in bodies', async () => {
    await expectError(await post(TOKEN_PATH, JSON.stringify({ platformApiKey: 12345 })), 400, 'invalid_argument');
  });

  it('internal error: 500 with no stack and no path, logged with the request id', async () => {
    const { token } = await tokenFor(host);
    const res = await fetch(`${host.url}/api/v1/test-internal-error`, { headers: { authorization: `Bearer ${token}` } });
    const requestId = res.headers.get('x-request-id');
    const err = await expectError(res, 500, 'internal');
    expect(err.type).toBe('server_error');
    expect(err.message).not.toMatch(/secret|ENOENT|\/|at /);
    expect(err.message).toContain(requestId!);
    const logged = host.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.reqId === requestId && l.level === 50);
    expect(logged).toBeDefined();
    expect(JSON.stringify(logged)).toContain('/secret/place/model.bin');
  });

  it('every response carries a request id', async () => {
    const res = await fetch(`${host.url}/healthz`);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
