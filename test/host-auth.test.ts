// Auth end to end against the real app on a free port: the token exchange, every 401 path, the
// failure rate limit, and revocation.
import crypto from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SignJWT, decodeJwt } from 'jose';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';

let host: TestHost;

beforeEach(async () => {
  host = await listen(await startInProcessHost({ AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW_SECONDS: '60' }));
});
afterEach(async () => {
  await host.close();
});

const exchange = (key: unknown) =>
  fetch(`${host.url}/api/v1/authentication/platform-api-key`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platformApiKey: key }),
  });

const callKeys = (authorization?: string) =>
  fetch(`${host.url}/api/v1/keys`, { headers: authorization === undefined ? {} : { authorization } });

async function expect401(res: Response, messagePart: string) {
  expect(res.status).toBe(401);
  expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
  const body = (await res.json()) as { error: { code: string; message: string; type: string } };
  expect(body.error.code).toBe('unauthenticated');
  expect(body.error.type).toBe('authentication_error');
  expect(body.error.message).toContain(messagePart);
}

describe('token exchange', () => {
  it('returns an HS256 token that lives 24 hours and opens authenticated routes', async () => {
    const { key, keyId } = await tokenFor(host);
    const before = Math.floor(Date.now() / 1000);
    const res = await exchange(key);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { accessToken: string; expiredAt: number };
    expect(Object.keys(body).sort()).toEqual(['accessToken', 'expiredAt']);
    expect(body.expiredAt - before).toBeGreaterThanOrEqual(86_400 - 1);
    expect(body.expiredAt - before).toBeLessThanOrEqual(86_400 + 1);
    const header = JSON.parse(Buffer.from(body.accessToken.split('.')[0]!, 'base64url').toString());
    expect(header.alg).toBe('HS256');
    expect(decodeJwt(body.accessToken).sub).toBe(keyId);

    const ok = await callKeys(`Bearer ${body.accessToken}`);
    expect(ok.status).toBe(200);
    const listed = (await ok.json()) as { keys: Array<{ id: string; lastUsedAt: number | null }> };
    expect(listed.keys.map((k) => k.id)).toEqual([keyId]);
    expect(listed.keys[0]!.lastUsedAt).not.toBeNull();
    expect(JSON.stringify(listed)).not.toContain(key.slice('psk_0123456789abcdef_'.length));
  });

  it('accepts the scheme in any case', async () => {
    const { token } = await tokenFor(host);
    expect((await callKeys(`bearer ${token}`)).status).toBe(200);
  });

  it('refuses an unknown key, a malformed key and a wrong secret with 401', async () => {
    const { key } = await tokenFor(host);
    const wrongSecret = key.slice(0, -4) + (key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    for (const bad of ['psk_0123456789abcdef_' + 'A'.repeat(43), 'not-a-key', wrongSecret]) {
      const res = await exchange(bad);
      await expect401(res, 'invalid or revoked API key');
    }
  });

  it('refuses a missing or mistyped key field with 400 naming the field', async () => {
    const res = await exchange(42);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; param: string; message: string } };
    expect(body.error).toMatchObject({ code: 'invalid_argument', param: 'platformApiKey' });
    expect(body.error.message).toContain('platformApiKey');

    const missing = await fetch(`${host.url}/api/v1/authentication/platform-api-key`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiKey: 'x' }),
    });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { param: string } }).error.param).toBe('platformApiKey');
  });

  it('rate-limits repeated failures with 429 and Retry-After, per client', async () => {
    const { key } = await tokenFor(host);
    for (let i = 0; i < 3; i++) expect((await exchange('psk_bad')).status).toBe(401);
    const limited = await exchange('psk_bad');
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(((await limited.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
    // Even a good key waits: otherwise the limit would tell a guesser when it hit.
    expect((await exchange(key)).status).toBe(429);
    host.advance(61_000);
    expect((await exchange(key)).status).toBe(200);
  });
});

describe('every 401 path', () => {
  it('no Authorization header', async () => {
    await expect401(await callKeys(), 'missing Authorization header');
  });

  it('a malformed header', async () => {
    for (const h of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b', 'token abc']) {
      await expect401(await callKeys(h), 'Authorization header');
    }
  });

  it('an API key sent as the token: told to exchange it first, the same for real, revoked and unknown keys', async () => {
    const { key, keyId } = await tokenFor(host);
    const revoked = (await tokenFor(host, 'revoked')).key;
    await host.app.keys.revoke(revoked.slice('psk_'.length, 'psk_'.length + 16));
    const unknown = 'psk_0123456789abcdef_' + 'A'.repeat(43);
    const answers: string[] = [];
    for (const credential of [key, revoked, unknown, 'psk_truncated']) {
      const res = await callKeys(`Bearer ${credential}`);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('unauthenticated');
      expect(body.error.message).toContain('this is a platform API key, not an access token');
      expect(body.error.message).toContain('POST /api/v1/authentication/platform-api-key');
      answers.push(JSON.stringify(body));
    }
    // One answer for every key: nothing tells whether the key exists or was revoked.
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]).not.toContain(keyId);
    // Following the advice works.
    const exchanged = (await (await exchange(key)).json()) as { accessToken: string };
    expect((await callKeys(`Bearer ${exchanged.accessToken}`)).status).toBe(200);
  });

  it('a token with a bad signature', async () => {
    const { token } = await tokenFor(host);
    const [h, p] = token.split('.');
    const forged = `${h}.${p}.${Buffer.from(crypto.randomBytes(32)).toString('base64url')}`;
    await expect401(await callKeys(`Bearer ${forged}`), 'access token is invalid');
    // Signed with another secret, and with alg "none".
    const other = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('x').setIssuedAt().setExpirationTime('1h').sign(crypto.randomBytes(32));
    await expect401(await callKeys(`Bearer ${other}`), 'access token is invalid');
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`;
    await expect401(await callKeys(`Bearer ${none}`), 'access token is invalid');
    await expect401(await callKeys('Bearer not.a.jwt'), 'access token is invalid');
  });

  it('an expired token (clock moved past 24 hours)', async () => {
    const { token } = await tokenFor(host);
    host.advance(24 * 3600 * 1000 - 60_000);
    expect((await callKeys(`Bearer ${token}`)).status).toBe(200);
    host.advance(120_000);
    await expect401(await callKeys(`Bearer ${token}`), 'expired');
  });

  it('a revoked key: its tokens stop working at once, and it cannot get new ones', async () => {
    const { key, keyId, token } = await tokenFor(host);
    expect((await callKeys(`Bearer ${token}`)).status).toBe(200);
    expect(await host.app.keys.revoke(keyId)).toBe(true);
    await expect401(await callKeys(`Bearer ${token}`), 'revoked');
    await expect401(await exchange(key), 'invalid or revoked API key');
  });

  it('a token for a key that does not exist', async () => {
    const token = await host.app.tokens.issue('ffffffffffffffff');
    await expect401(await callKeys(`Bearer ${token.accessToken}`), 'the API key behind this token does not exist');
  });

  it('health checks need no token; metrics do unless METRICS_PUBLIC=1', async () => {
    expect((await fetch(`${host.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${host.url}/readyz`)).status).toBe(200);
    await expect401(await fetch(`${host.url}/metrics`), 'missing Authorization header');
    const { token } = await tokenFor(host);
    const metrics = await fetch(`${host.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text.startsWith('# HELP')).toBe(true);
    expect(text).toContain('http_request_duration_seconds_bucket');
    expect(text).toContain('process_cpu_user_seconds_total');
  });
});

describe('public metrics', () => {
  it('serves /metrics without a token when METRICS_PUBLIC=1', async () => {
    const open = await listen(await startInProcessHost({ METRICS_PUBLIC: '1' }));
    try {
      const res = await fetch(`${open.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/plain');
    } finally {
      await open.close();
    }
  });
});
