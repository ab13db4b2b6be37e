// Runs the real `platform` binary (the compiled dist/cli/main.js).
import { spawn } from 'node:child_process';
import { CLI_MAIN } from './paths.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; `input`, when given, is written to its stdin (then closed). */
export function runCli(args: string[], env: Record<string, string> = {}, input?: string): Promise<CliResult> {
  const proc = spawn(process.execPath, [CLI_MAIN, ...args], {
    env: { ...process.env, ...env },
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (input !== undefined) proc.stdin!.end(input);
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (c: Buffer) => (stdout += c));
  proc.stderr!.on('data', (c: Buffer) => (stderr += c));
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, stdout, stderr })));
}
