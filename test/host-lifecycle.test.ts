// The real `npm start` entry point in a child process: start-up failures in one line, secrets kept
// out of the logs, graceful shutdown that finishes a request in flight, and the human start line.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/database.js';
import { runCli } from './helpers/cli.js';
import { runHostToExit, spawnHost, startLineOf } from './helpers/child-host.js';
import { apiClient, waitForDeployment } from './helpers/api.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { linearModel } from './helpers/models.js';
import { tempDir } from './helpers/paths.js';

async function newKey(dataDir: string): Promise<string> {
  const res = await runCli(['keys', 'create', '--name', 'lifecycle'], { DATA_DIR: dataDir });
  expect(res.code).toBe(0);
  return res.stdout.trim();
}

describe('host process', () => {
  it('finishes a request in flight on SIGTERM, closes the database and exits 0', async () => {
    const dataDir = tempDir();
    const key = await newKey(dataDir);
    const host = await spawnHost({ DATA_DIR: dataDir });
    const body = JSON.stringify({ platformApiKey: key });
    const { port } = new URL(host.url);

    // Send the headers and half of the body, then signal: the request is in flight.
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, method: 'POST', path: '/api/v1/authentication/platform-api-key', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 10));
      setTimeout(() => {
        host.proc.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(10)), 500);
      }, 200);
    });

    const done = await response;
    expect(done.status).toBe(200);
    expect(JSON.parse(done.body).accessToken).toEqual(expect.any(String));
    expect(await host.exited).toBe(0);
    expect(host.stdout()).toContain('shutting down');
    expect(host.stdout()).toContain('"msg":"stopped"');
    // A cleanly closed SQLite connection folds its write-ahead log back and removes it.
    expect(fs.existsSync(path.join(dataDir, 'platform.db-wal'))).toBe(false);
  });

  it('with DRAIN_DELAY_SECONDS, is not ready but still serves for the delay after SIGTERM, then exits 0', async () => {
    const host = await spawnHost({ DRAIN_DELAY_SECONDS: '2' });
    expect((await fetch(`${host.url}/readyz`)).status).toBe(200);
    const signalled = Date.now();
    host.proc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    expect((await fetch(`${host.url}/readyz`)).status).toBe(503);
    // a new connection is still taken, and answered
    expect((await fetch(`${host.url}/healthz`)).status).toBe(200);
    expect(await host.exited).toBe(0);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(2000);
    expect(host.stdout()).toContain('draining: not ready, still serving');
  });

  it('exits 0 on SIGINT too, and refuses new connections while draining', async () => {
    const host = await spawnHost();
    expect((await fetch(`${host.url}/healthz`)).status).toBe(200);
    host.proc.kill('SIGINT');
    expect(await host.exited).toBe(0);
    await expect(fetch(`${host.url}/healthz`)).rejects.toThrow();
  });

  it('never logs keys or tokens, even at trace level', async () => {
    const dataDir = tempDir();
    const key = await newKey(dataDir);
    const host = await spawnHost({ DATA_DIR: dataDir, LOG_LEVEL: 'trace' });
    const res = await fetch(`${host.url}/api/v1/authentication/platform-api-key`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ platformApiKey: key }),
    });
    const { accessToken } = (await res.json()) as { accessToken: string };
    expect((await fetch(`${host.url}/api/v1/keys`, { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(200);
    await fetch(`${host.url}/api/v1/keys?token=x`, { headers: { authorization: `Bearer ${accessToken}x` } });
    host.proc.kill('SIGTERM');
    expect(await host.exited).toBe(0);
    const logs = host.stdout() + host.stderr();
    expect(logs).toContain('access token issued');
    expect(logs).not.toContain(key);
    expect(logs).not.toContain(key.slice('psk_0123456789abcdef_'.length));
    expect(logs).not.toContain(accessToken);
    expect(logs).not.toContain(accessToken.split('.')[2]);
    // Structured: every stdout line is one JSON object.
    for (const line of host.stdout().trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('makes the token secret once, mode 0600, and keeps tokens valid across restarts', async () => {
    const dataDir = tempDir();
    const key = await newKey(dataDir);
    const first = await spawnHost({ DATA_DIR: dataDir });
    const secretFile = path.join(dataDir, 'token-secret');
    expect(fs.statSync(secretFile).mode & 0o777).toBe(0o600);
    const res = await fetch(`${first.url}/api/v1/authentication/platform-api-key`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ platformApiKey: key }),
    });
    const { accessToken } = (await res.json()) as { accessToken: string };
    first.proc.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = await spawnHost({ DATA_DIR: dataDir });
    expect((await fetch(`${second.url}/api/v1/keys`, { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(200);
    second.proc.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    // With PLATFORM_TOKEN_SECRET set, the file's secret no longer signs: old tokens are invalid.
    const third = await spawnHost({ DATA_DIR: dataDir, PLATFORM_TOKEN_SECRET: 'x'.repeat(40) });
    expect((await fetch(`${third.url}/api/v1/keys`, { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(401);
    third.proc.kill('SIGTERM');
    expect(await third.exited).toBe(0);
  });
});

describe('start-up failures are one line', () => {
  it('a missing native addon names the command that fixes it', async () => {
    const res = await runHostToExit({ PLATFORM_ADDON_PATH: path.join(tempDir(), 'platform.node') });
    expect(res.code).toBe(1);
    const lines = res.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/native addon/);
    expect(lines[0]).toContain('npm run build:native');
    expect(res.stderr).not.toMatch(/\n\s+at /);
  });

  it('an addon file that is not a library names the command that fixes it', async () => {
    const fake = path.join(tempDir(), 'platform.node');
    fs.writeFileSync(fake, 'not an ELF file');
    const res = await runHostToExit({ PLATFORM_ADDON_PATH: fake });
    expect(res.code).toBe(1);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toContain('npm run build:native');
  });

  it('a bad variable exits 2 naming it', async () => {
    for (const [name, value] of [
      ['PORT', 'eighty'],
      ['LOG_LEVEL', 'loud'],
      ['METRICS_PUBLIC', 'maybe'],
      ['DOCS_PUBLIC', 'maybe'],
      ['PLATFORM_TOKEN_SECRET', 'short'],
      ['REPLICA_ID', 'has spaces'],
      ['REPLICA_ADDRESS', 'ftp://elsewhere'],
      ['CONFIG_POLL_MS', '0'],
      ['REPLICA_TIMEOUT_MS', 'soon'],
    ] as const) {
      const res = await runHostToExit({ [name]: value });
      expect(res.code).toBe(2);
      expect(res.stderr.trim().split('\n')).toHaveLength(1);
      expect(res.stderr).toContain(name);
    }
  });
});

describe('the start line', () => {
  it('names the address, DATA_DIR and MODELS_DIR, which it makes (mode 0755) when missing, on stderr alone', async () => {
    const dataDir = tempDir();
    const modelsDir = path.join(tempDir(), 'nested', 'models');
    const host = await spawnHost({ DATA_DIR: dataDir, MODELS_DIR: modelsDir });
    const line = await startLineOf(host);
    expect(line).toBe(`platform: listening on ${host.url}; DATA_DIR ${dataDir}; MODELS_DIR ${modelsDir} (created, mode 0755); no models yet`);
    expect(fs.statSync(modelsDir).mode & 0o777).toBe(0o755);
    host.proc.kill('SIGTERM');
    expect(await host.exited).toBe(0);
    // One human line on stderr; stdout stays one JSON object per line.
    expect(host.stderr().trim().split('\n')).toEqual([line]);
    for (const l of host.stdout().trim().split('\n')) expect(() => JSON.parse(l)).not.toThrow();

    // The second time the folder is there: nothing is said about it.
    const again = await spawnHost({ DATA_DIR: dataDir, MODELS_DIR: modelsDir });
    expect(await startLineOf(again)).toBe(`platform: listening on ${again.url}; DATA_DIR ${dataDir}; MODELS_DIR ${modelsDir}; no models yet`);
    again.proc.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });

  it('lists the realtime and library models, with how this start left each one', async () => {
    const dataDir = tempDir();
    const modelsDir = tempDir();
    writeTinyChatModel(modelsDir, 'tiny-chat');
    const key = await newKey(dataDir);
    const env = { DATA_DIR: dataDir, MODELS_DIR: modelsDir, LLM_CONTEXT_LENGTH: '256' };
    const first = await spawnHost(env);
    expect(await startLineOf(first)).toMatch(/; no models yet$/);
    const exchanged = await fetch(`${first.url}/api/v1/authentication/platform-api-key`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ platformApiKey: key }),
    });
    const api = apiClient(first.url, ((await exchanged.json()) as { accessToken: string }).accessToken);
    expect((await api('POST', '/api/v1/models', { model_id: 'fraud' })).status).toBe(201);
    const build = await api<{ build_id: string }>('POST', '/api/v1/models/fraud/builds?feature_names=amount,age', linearModel(['amount', 'age'], 0.5));
    expect(build.status).toBe(201);
    const dep = await api<{ deployment_id: string }>('POST', '/api/v1/models/fraud/deployments', { build_id: build.body.build_id });
    expect((await waitForDeployment(api, dep.body.deployment_id)).status).toBe('LIVE');
    expect((await api('POST', '/api/v1/library/deployments', { name: 'tiny-chat', model_id: 'tinyllama' })).status).toBe(202);
    for (;;) {
      const lib = await api<{ status: string }>('GET', '/api/v1/library/deployments/tinyllama');
      if (lib.body.status === 'LIVE') break;
      expect(lib.body.status).not.toBe('FAILED');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    first.proc.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    // Two library deployments: one that failed for a broken file (FAILED until it is deployed
    // again, not loaded by this start), and one a stop interrupted while it loaded, which this
    // start carries on (and, its file missing, records why it failed).
    const db = openDatabase(dataDir);
    for (const [id, status, reason, kind, later] of [
      ['broken', 'FAILED', 'GGUF header is damaged', 'load_error', Date.now() + 1000],
      ['halfway', 'DEPLOYING', null, null, Date.now() + 2000],
    ] as const) {
      db.prepare("INSERT INTO models (id, project, description, kind, created_at) VALUES (?, 'library', '', 'library', ?)").run(id, later);
      db.prepare(
        `INSERT INTO library_deployments (model_id, name, file, instance_type, status, reason, failure_kind, created_at, updated_at)
         VALUES (?, ?, ?, 'cpu', ?, ?, ?, ?, ?)`,
      ).run(id, id, `${id}.gguf`, status, reason, kind, later, later);
    }
    db.close();

    const second = await spawnHost(env);
    expect(await startLineOf(second)).toBe(
      `platform: listening on ${second.url}; DATA_DIR ${dataDir}; MODELS_DIR ${modelsDir}; 4 models: fraud (realtime, LIVE), tinyllama (library, LIVE), ` +
        'broken (library, FAILED: load_error, not retried), halfway (library, FAILED: missing_file)',
    );
    second.proc.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
