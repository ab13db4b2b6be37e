// How the real `platform` binary ends when things go wrong: a reader that closes the pipe early
// ends it quietly with status 0, and every failure (an unreachable host, something else than the
// platform at PLATFORM_URL, an error nobody foresaw) is one `platform: ...` line without a stack
// trace, unless PLATFORM_DEBUG=1 asks for it. Help asked for is a success, as the version is;
// help shown for a command line that lacks its command is bad usage. And the version is the
// package's.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../src/auth/api-keys.js';
import { openStore } from '../src/store/store.js';
import { runCli } from './helpers/cli.js';
import { freePort } from './helpers/free-port.js';
import { CLI_MAIN, ROOT, tempDir } from './helpers/paths.js';

/** A line of a JavaScript stack trace. */
const STACK_LINE = /^\s+at /m;

/** Runs the CLI and closes its stdout after the first bytes arrive, as `| head -c 1` does. */
function runWithEarlyClose(args: string[], env: Record<string, string>): Promise<{ code: number | null; signal: string | null; firstBytes: number; stderr: string }> {
  const proc = spawn(process.execPath, [CLI_MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let firstBytes = 0;
  let stderr = '';
  proc.stdout!.once('data', (chunk: Buffer) => {
    firstBytes = chunk.length;
    proc.stdout!.destroy();
  });
  proc.stderr!.on('data', (c: Buffer) => (stderr += c));
  return new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal, firstBytes, stderr })));
}

describe('a closed stdout', () => {
  let dataDir: string;
  let tableBytes: number;

  beforeAll(async () => {
    // Enough keys that `keys list` writes far more than a pipe holds (64 KiB on Linux), so that
    // its write is still going on when the reader goes away.
    dataDir = tempDir();
    const store = await openStore({ dataDir });
    await store.db.transaction().execute(async (trx) => {
      const keys = new ApiKeyStore(trx);
      for (let i = 0; i < 3000; i++) await keys.create(`${'a-long-key-name-'.repeat(7)}${i}`);
    });
    await store.close();
    const full = await runCli(['keys', 'list'], { DATA_DIR: dataDir });
    expect(full.code, full.stderr).toBe(0);
    tableBytes = full.stdout.length;
    expect(tableBytes).toBeGreaterThan(256 * 1024);
  });

  it('ends `keys list | head` quietly with status 0', async () => {
    for (let run = 0; run < 3; run++) {
      const res = await runWithEarlyClose(['keys', 'list'], { DATA_DIR: dataDir });
      expect(res.firstBytes).toBeGreaterThan(0);
      expect(res.firstBytes).toBeLessThan(tableBytes);
      expect(res.stderr).toBe('');
      expect(res.signal).toBeNull();
      expect(res.code).toBe(0);
    }
  });

});

describe('failures are one line', () => {
  it('an unreachable PLATFORM_URL names the address, without a stack', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const res = await runCli(['models', 'list'], { PLATFORM_URL: url, PLATFORM_API_KEY: 'psk_x', PLATFORM_CACHE_DIR: tempDir(), PLATFORM_DEBUG: '' });
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(`platform: cannot reach the platform at ${url} (ECONNREFUSED); is the host running ("npm start")?\n`);
  });

  it('a PLATFORM_URL that is not a URL is a usage error', async () => {
    const res = await runCli(['status'], { PLATFORM_URL: 'localhost port 8080', PLATFORM_API_KEY: 'psk_x' });
    expect(res.code).toBe(2);
    expect(res.stderr).toBe('platform: PLATFORM_URL is not a URL: "localhost port 8080"\n');
  });

  it("commander's own usage errors read the same way", async () => {
    const res = await runCli(['keys', 'create', '--bogus'], { DATA_DIR: tempDir() });
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^platform: unknown option '--bogus'\n/);
  });

  describe('something else than the platform at PLATFORM_URL', () => {
    let server: http.Server;
    let url: string;
    let answer: { status: number; type: string; body: string; headers?: Record<string, string> };

    beforeAll(async () => {
      server = http.createServer((_req, res) => {
        res.writeHead(answer.status, { 'content-type': answer.type, ...answer.headers });
        res.end(answer.body);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    });
    afterAll(() => new Promise((resolve) => server.close(resolve)));

    const env = (debug = '') => ({ PLATFORM_URL: url, PLATFORM_API_KEY: 'psk_x', PLATFORM_CACHE_DIR: tempDir(), PLATFORM_DEBUG: debug });

    it('an HTML page is refused by name, not misread', async () => {
      answer = { status: 200, type: 'text/html', body: '<html>a router login page</html>' };
      const res = await runCli(['models', 'list'], env());
      expect(res.code).toBe(1);
      expect(res.stderr).toBe(`platform: ${url} answered HTTP 200 with a body that is not JSON; is PLATFORM_URL (${url}) the platform's address?\n`);
      answer = { status: 404, type: 'text/html', body: '<html>not found</html>' };
      const missing = await runCli(['models', 'list'], env());
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`${url} answered HTTP 404 without a platform error body`);
    });

    it('an error nobody foresaw is one line, and its stack only with PLATFORM_DEBUG=1', async () => {
      // A body that says it is gzip-compressed and is not: fetch fails while it decodes the bytes,
      // below anything the client reads or checks, so no validation of answers that the client
      // may learn later turns this into a foreseen error. The first request (the key exchange)
      // meets it.
      answer = { status: 200, type: 'application/json', headers: { 'content-encoding': 'gzip' }, body: '{"accessToken": "not gzip at all"}' };
      const res = await runCli(['models', 'list'], env());
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^platform: [^\n]+\n$/);
      expect(res.stderr).not.toMatch(STACK_LINE);
      const debug = await runCli(['models', 'list'], env('1'));
      expect(debug.code).toBe(1);
      expect(debug.stderr.split('\n')[0]).toBe(res.stderr.trim());
      expect(debug.stderr).toMatch(STACK_LINE);
    });
  });
});

describe('help', () => {
  it('asked for (`help`, `help <command>`, --help) is printed on stdout with status 0', async () => {
    for (const args of [['help'], ['help', 'models'], ['--help'], ['models', '--help'], ['help', 'library']]) {
      const res = await runCli(args);
      expect(res.code, args.join(' ')).toBe(0);
      expect(res.stdout, args.join(' ')).toMatch(/^Usage: platform /);
      expect(res.stderr, args.join(' ')).toBe('');
    }
    expect((await runCli(['help', 'models'])).stdout).toMatch(/^Usage: platform models /);
  });

  it('shown because the command is missing is bad usage, status 2, on stderr', async () => {
    for (const args of [[], ['models']]) {
      const res = await runCli(args);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(/^Usage: platform /);
    }
    const unknown = await runCli(['nosuch']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^platform: unknown command 'nosuch'\n/);
  });
});

describe('--version', () => {
  it("is the package's version", async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const res = await runCli(['--version']);
    expect(res.code).toBe(0);
    expect(res.stdout).toBe(`${version}\n`);
  });
});
