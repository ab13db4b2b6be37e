// The real `platform` binary: help and exit codes, keys on DATA_DIR with and without a running
// host, and the shared HTTP client (token exchange, caching, refusal messages).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { freePort } from './helpers/free-port.js';
import { spawnHost, type ChildHost } from './helpers/child-host.js';
import { loadAddon } from '../src/native/addon.js';
import { tempDir } from './helpers/paths.js';

const KEY_LINE = /^psk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}\n$/;

describe('usage', () => {
  it('--help works at every level and exits 0', async () => {
    for (const args of [[], ['keys'], ['keys', 'create'], ['keys', 'list'], ['keys', 'revoke'], ['status'], ['engine']]) {
      const res = await runCli([...args, '--help']);
      expect(res.code, args.join(' ')).toBe(0);
      expect(res.stdout).toContain('Usage: platform');
    }
  });

  it('bad usage exits 2 with a message', async () => {
    const cases = [['frobnicate'], ['keys', 'create', '--bogus'], ['keys', 'revoke'], ['keys'], ['keys', 'create', '--name', '']];
    for (const args of cases) {
      const res = await runCli(args, { DATA_DIR: tempDir() });
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr.length).toBeGreaterThan(0);
    }
  });
});

describe('keys on DATA_DIR', () => {
  it('create prints the key alone on stdout; list and revoke manage it', async () => {
    const env = { DATA_DIR: tempDir() };
    const created = await runCli(['keys', 'create', '--name', 'ci'], env);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(KEY_LINE);
    const id = created.stdout.split('_')[1]!;
    expect(created.stderr).toContain(id);

    const list = await runCli(['keys', 'list'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+ci\\s+.*active`));
    expect(list.stdout).not.toContain(created.stdout.trim().slice('psk_0123456789abcdef_'.length));

    const revoked = await runCli(['keys', 'revoke', id], env);
    expect(revoked.code).toBe(0);
    const json = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout) as Array<{ id: string; revokedAt: number | null }>;
    expect(json).toHaveLength(1);
    expect(json[0]!.id).toBe(id);
    expect(json[0]!.revokedAt).toEqual(expect.any(Number));

    const unknown = await runCli(['keys', 'revoke', 'ffffffffffffffff'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no API key with id "ffffffffffffffff"');
  });

  it('create says on stderr when it starts a new store; an existing store says nothing extra', async () => {
    const dir = path.join(tempDir(), 'fresh');
    const first = await runCli(['keys', 'create'], { DATA_DIR: dir });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(KEY_LINE);
    expect(first.stderr.split('\n')[0]).toBe(`no store in DATA_DIR (${dir}) yet: creating a new one there`);
    expect(fs.existsSync(path.join(dir, 'platform.db'))).toBe(true);
    const second = await runCli(['keys', 'create'], { DATA_DIR: dir });
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(KEY_LINE);
    expect(second.stderr).not.toContain('store');
    expect(second.stderr).toMatch(/^created API key [0-9a-f]{16} \(default, role admin\); it is not shown again\n$/);
  });

  it('list and revoke on a DATA_DIR without a store say so and create nothing', async () => {
    const dir = path.join(tempDir(), 'typo');
    const list = await runCli(['keys', 'list'], { DATA_DIR: dir });
    expect(list.code).toBe(0);
    expect(list.stderr).toBe(`no store in DATA_DIR (${dir}) yet, so no keys\n`);
    expect(list.stdout).toMatch(/^ID\s+NAME\s+ROLE\s+SCOPE\s+CREATED\s+LAST USED\s+STATUS\n$/);
    expect(JSON.parse((await runCli(['keys', 'list', '--json'], { DATA_DIR: dir })).stdout)).toEqual([]);
    const revoke = await runCli(['keys', 'revoke', 'ffffffffffffffff'], { DATA_DIR: dir });
    expect(revoke.code).toBe(1);
    expect(revoke.stderr).toBe(`platform: no API key with id "ffffffffffffffff": there is no store in DATA_DIR (${dir}) yet\n`);
    expect(fs.existsSync(dir)).toBe(false);
  });
});

describe('against a running host', () => {
  let host: ChildHost;
  let cacheDir: string;

  beforeAll(async () => {
    host = await spawnHost();
    cacheDir = tempDir();
  });
  afterAll(async () => {
    host.proc.kill('SIGTERM');
    await host.exited;
  });

  const env = (key: string) => ({ DATA_DIR: host.dataDir, PLATFORM_URL: host.url, PLATFORM_API_KEY: key, PLATFORM_CACHE_DIR: cacheDir });
  const exchanges = () => host.stdout().split('access token issued').length - 1;

  it('a key created while the host runs works at once, and its token is cached', async () => {
    const key = (await runCli(['keys', 'create'], { DATA_DIR: host.dataDir })).stdout.trim();
    const before = exchanges();
    const first = await runCli(['status', '--json'], env(key));
    expect(first.code, first.stderr).toBe(0);
    const status = JSON.parse(first.stdout) as { status: string; engine: { simd: { active: string } } };
    expect(status.status).toBe('ready');
    // The host's engine, over HTTP, is the one `platform engine` loads here: same machine, same env.
    expect(['scalar', 'avx2', 'avx512', 'neon']).toContain(status.engine.simd.active);
    const local = await runCli(['engine', '--json']);
    expect(status.engine.simd).toEqual((JSON.parse(local.stdout) as { simd: unknown }).simd);
    const files = fs.readdirSync(cacheDir);
    expect(files).toHaveLength(1);
    expect(fs.statSync(path.join(cacheDir, files[0]!)).mode & 0o777).toBe(0o600);

    const second = await runCli(['status'], env(key));
    expect(second.code).toBe(0);
    expect(exchanges() - before).toBe(1);
    // For people: aligned "label: value" lines, then the host's engine as `platform engine` shows
    // this machine's (the same addon, the same environment).
    const lines = second.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^status:\s+ready$/);
    expect(lines[1]).toMatch(new RegExp(`^host:\\s+${host.url}$`));
    const column = lines[0]!.indexOf('ready');
    for (const line of lines) expect(line.slice(0, column), line).toMatch(/^[a-z ]+:\s+$/);
    expect(second.stdout).not.toMatch(/undefined|null|\[object/);
    expect(lines.slice(2).join('\n') + '\n').toBe((await runCli(['engine'])).stdout);
  });

  it('a revoked key fails with the server message and exit 1, even with a cached token', async () => {
    const created = (await runCli(['keys', 'create'], { DATA_DIR: host.dataDir })).stdout.trim();
    expect((await runCli(['status'], env(created))).code).toBe(0);
    expect((await runCli(['keys', 'revoke', created.split('_')[1]!], { DATA_DIR: host.dataDir })).code).toBe(0);
    // Revoked by another process on the store: in force once the host reads it again (well within
    // a second; a loaded machine can delay the CLI's own start longer than that).
    let res = await runCli(['status'], env(created));
    for (let i = 0; i < 10 && res.code === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      res = await runCli(['status'], env(created));
    }
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('invalid or revoked API key (HTTP 401)');
  });

  it('an unknown key fails with exit 1', async () => {
    const res = await runCli(['status'], env('psk_0000000000000000_' + 'A'.repeat(43)));
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('invalid or revoked API key');
  });
});

describe('client errors', () => {
  it('no PLATFORM_API_KEY is a usage error', async () => {
    const res = await runCli(['status'], { PLATFORM_URL: 'http://127.0.0.1:9', PLATFORM_API_KEY: '' });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('PLATFORM_API_KEY is not set');
  });

  it('an unreachable host says so in one line', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const res = await runCli(['status'], { PLATFORM_URL: url, PLATFORM_API_KEY: 'psk_x', PLATFORM_CACHE_DIR: tempDir() });
    expect(res.code).toBe(1);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toContain(`cannot reach the platform at ${url} (ECONNREFUSED)`);
  });
});

describe('platform engine', () => {
  it('shows the local engine: exact JSON with --json', async () => {
    const res = await runCli(['engine', '--json']);
    expect(res.code, res.stderr).toBe(0);
    const info = JSON.parse(res.stdout) as { simd: { active: string }; threads: number };
    expect(info).toEqual(loadAddon().engineInfo());
    expect(['scalar', 'avx2', 'avx512', 'neon']).toContain(info.simd.active);
    expect(info.threads).toBeGreaterThan(0);
  });

  it('shows the local engine as aligned fields for people', async () => {
    const info = loadAddon().engineInfo();
    const res = await runCli(['engine']);
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^engine version:\\s+${info.version}$`));
    const column = lines[0]!.indexOf(info.version);
    const fields = lines.filter((l) => !l.startsWith('DEVICE') && /^[a-z]/.test(l));
    for (const line of fields) expect(line.slice(0, column), line).toMatch(/^[a-z ]+:\s+$/);
    expect(res.stdout).toMatch(new RegExp(`\nsimd:\\s+${info.simd.active}\\b.*available: ${info.simd.available.join(', ')}\n`));
    expect(res.stdout).toMatch(new RegExp(`\nthreads:\\s+${info.threads}\n`));
    expect(res.stdout).toMatch(info.cuda.built ? /\ncuda:\s+built/ : /\ncuda:\s+not built \(npm run build:cuda/);
    if (info.cuda.devices.length > 0) expect(res.stdout).toMatch(/\nDEVICE\s+NAME\s+MEMORY\s+COMPUTE CAPABILITY\n0\s+/);
    expect(res.stdout).not.toMatch(/undefined|null|\[object/);
  });

  it('a missing addon is one line naming the fix', async () => {
    const res = await runCli(['engine'], { PLATFORM_ADDON_PATH: path.join(tempDir(), 'missing.node') });
    expect(res.code).toBe(1);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toContain('npm run build:native');
  });
});
