// The real `npm start` entry point as a child process on a free port.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { HOST_MAIN, tempDir } from './paths.js';

export interface ChildHost {
  proc: ChildProcess;
  url: string;
  dataDir: string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

export function spawnHost(env: Record<string, string> = {}): Promise<ChildHost> {
  const dataDir = env.DATA_DIR ?? tempDir();
  const proc = spawn(process.execPath, [HOST_MAIN], {
    // MODELS_DIR inside DATA_DIR: the host makes it when missing, and the default (./models) would
    // be made in the working tree.
    env: { ...process.env, DATA_DIR: dataDir, MODELS_DIR: path.join(dataDir, 'models'), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`host did not start:\n${out}\n${err}`)), 20_000);
    proc.stdout!.on('data', (chunk: Buffer) => {
      out += chunk;
      const m = /"msg":"Server listening at (http:\/\/127\.0\.0\.1:\d+)"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1]!, dataDir, stdout: () => out, stderr: () => err, exited });
      }
    });
    proc.stderr!.on('data', (chunk: Buffer) => {
      err += chunk;
      // With LOG_LEVEL above info there is no "listening" log line: the start line says it.
      const m = /^platform: listening on (http:\/\/127\.0\.0\.1:\d+);/m.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1]!, dataDir, stdout: () => out, stderr: () => err, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`host exited with ${code} before listening:\n${out}\n${err}`));
    });
  });
}

/** Runs the host to completion (for start-up failures) and returns its output. */
export function runHostToExit(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const dataDir = tempDir();
  const proc = spawn(process.execPath, [HOST_MAIN], {
    env: { ...process.env, DATA_DIR: dataDir, MODELS_DIR: path.join(dataDir, 'models'), PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c));
  proc.stderr.on('data', (c: Buffer) => (stderr += c));
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, stdout, stderr })));
}

/** The host's human start line on stderr (src/server/start-line.ts), once it is printed. */
export async function startLineOf(host: ChildHost, timeoutMs = 20_000): Promise<string> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const line = host.stderr().split('\n').find((l) => l.startsWith('platform: listening on '));
    if (line !== undefined) return line;
    if (Date.now() > until) throw new Error(`no start line on stderr:\n${host.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
