// The README runs as written. Its shell blocks run in order in one bash session (variables carry
// from block to block, as in a user's terminal), the files it tells the user to save are saved,
// and a real host answers, started by the README's own `npm start`. A block fails the test when
// any command in it fails, when it prints an error answer, a stack trace, or when an answer shown
// in a `# {...}` comment was not printed in that shape. (test/helpers/readme-steps.ts: the rules.)
//
// What the test does for the user, and nothing more:
// - the working directory is a fresh directory that links the installed clone (node_modules,
//   dist, build) instead of the clone itself, so that the README's ./data and ./models stay out
//   of the repository; `npm ci` and `npm test` are skipped (this clone is installed and under test);
// - `npm start` runs in the background (a user's second terminal) until /readyz answers;
// - the host's port is a free one instead of 8080: `127.0.0.1:8080` is rewritten to it in every
//   block and saved file, and PORT and PLATFORM_URL say the same;
// - the files a user brings are written first: fraud-v1.onnx and fraud-v2.onnx (small logistic
//   models over amount, age, country), and a tiny chat model in ~/Downloads under the GGUF name
//   the README uses (HOME is a directory of the test's own).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelBuilder } from './helpers/onnx-builder.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { ROOT, tempDir } from './helpers/paths.js';
import { rng } from './helpers/random.js';
import { printedJson, readmeSteps, sameShape, type ReadmeStep } from './helpers/readme-steps.js';

const README = path.join(ROOT, 'README.md');
const STEP_TIMEOUT_MS = 180_000;
// TinyLlama's chat template (Zephyr style), so the tiny model formats messages as the real one does.
const ZEPHYR_TEMPLATE =
  "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '</s>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";

/** A logistic model over `features`: score = sigmoid(x . w + b), one [N, 1] output named score. */
function fraudModel(features: readonly string[], seed: number): Uint8Array {
  const r = rng(seed);
  return new ModelBuilder({ opsets: { '': 13 } })
    .input('x', 'float', ['N', features.length])
    .initializer('W', 'float', [features.length, 1], features.map(() => (r() - 0.5) * 0.02))
    .initializer('B', 'float', [1], [r() - 0.5])
    .node('Gemm', ['x', 'W', 'B'], ['logit'], {}, { name: 'linear' })
    .node('Sigmoid', ['logit'], ['score'], {}, { name: 'sigmoid' })
    .output('score', 'float', ['N', 1])
    .toBytes();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The user's shell: one bash process fed one block at a time. */
class UserShell {
  private readonly proc: ChildProcess;
  private output = '';
  private waiters: Array<() => void> = [];

  constructor(
    readonly cwd: string,
    env: Record<string, string>,
  ) {
    fs.mkdirSync(path.join(cwd, '.readme'), { recursive: true });
    this.proc = spawn('bash', ['--noprofile', '--norc'], { cwd, env, stdio: ['pipe', 'pipe', 'inherit'] });
    this.proc.stdout!.on('data', (chunk: Buffer) => {
      this.output += chunk;
      for (const wake of this.waiters.splice(0)) wake();
    });
    // job control: the backgrounded host gets its own process group, which the test stops as one
    this.send('set -m; set -o errtrace -o pipefail');
    this.send(`trap 'echo "line $LINENO: $BASH_COMMAND (exit $?)" >> .readme/failed-$README_STEP' ERR`);
  }

  private send(line: string): void {
    this.proc.stdin!.write(line + '\n');
  }

  /** Runs `code` as step `n` and returns what it printed and which commands failed. */
  async run(n: number, code: string): Promise<{ stdout: string; stderr: string; failed: string }> {
    const dir = path.join(this.cwd, '.readme');
    fs.writeFileSync(path.join(dir, `step-${n}.sh`), code);
    const marker = `__README_STEP_DONE__ ${n}`;
    this.send(`README_STEP=${n}; source .readme/step-${n}.sh > .readme/out-${n} 2> .readme/err-${n} < /dev/null; echo "${marker}"`);
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    while (!this.output.includes(marker)) {
      if (Date.now() > deadline) throw new Error(`README step at line ${n} did not finish in ${STEP_TIMEOUT_MS / 1000} s`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 500);
      });
    }
    const read = (name: string) => (fs.existsSync(path.join(dir, name)) ? fs.readFileSync(path.join(dir, name), 'utf8') : '');
    return { stdout: read(`out-${n}`), stderr: read(`err-${n}`), failed: read(`failed-${n}`) };
  }

  /** Stops the backgrounded host (its whole process group) and the shell. */
  close(): void {
    const pidFile = path.join(this.cwd, '.readme/host.pid');
    if (fs.existsSync(pidFile)) {
      const pid = Number(fs.readFileSync(pidFile, 'utf8'));
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    this.proc.kill();
  }
}

/** The shell code a block becomes: the set-up commands the test does itself, the port rewritten. */
function shellCode(code: string, port: number): string {
  const out: string[] = [];
  for (const line of code.split('\n')) {
    const command = line.replace(/#.*$/, '').trim();
    if (command === 'npm ci' || command === 'npm test') {
      out.push(': # the clone under test is installed');
    } else if (command === 'npm start') {
      out.push('npm start > .readme/host.log 2>&1 &');
      out.push('echo $! > .readme/host.pid');
      out.push(`for _ in $(seq 1 150); do curl -sf http://127.0.0.1:${port}/readyz > /dev/null && break; sleep 0.2; done`);
      out.push(`curl -sf http://127.0.0.1:${port}/readyz > /dev/null`);
    } else {
      out.push(line.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`));
    }
  }
  return out.join('\n');
}

describe('the README, run as written', () => {
  let work: string;
  let port: number;
  let shell: UserShell;
  let steps: ReadmeStep[];

  beforeAll(async () => {
    steps = readmeSteps(README);
    work = tempDir('platform-readme-');
    for (const linked of ['node_modules', 'dist', 'build', 'package.json', 'package-lock.json']) {
      if (fs.existsSync(path.join(ROOT, linked))) fs.symlinkSync(path.join(ROOT, linked), path.join(work, linked));
    }
    for (const optional of ['build-cuda']) {
      if (fs.existsSync(path.join(ROOT, optional))) fs.symlinkSync(path.join(ROOT, optional), path.join(work, optional));
    }
    const features = ['amount', 'age', 'country'];
    fs.writeFileSync(path.join(work, 'fraud-v1.onnx'), fraudModel(features, 1));
    fs.writeFileSync(path.join(work, 'fraud-v2.onnx'), fraudModel(features, 2));
    fs.writeFileSync(path.join(work, 'fraud-v3.onnx'), fraudModel(features, 3));
    writeTinyChatModel(path.join(work, 'home/Downloads'), 'tinyllama-1.1b-chat-v1.0.Q4_K_M', { chatTemplate: ZEPHYR_TEMPLATE });

    port = await freePort();
    const inherited = (process.env.PATH ?? '').split(':').filter((p) => !p.includes('node_modules'));
    shell = new UserShell(work, {
      PATH: inherited.join(':'),
      HOME: path.join(work, 'home'),
      LANG: process.env.LANG ?? 'C.UTF-8',
      TMPDIR: process.env.TMPDIR ?? '/tmp',
      PORT: String(port),
      PLATFORM_URL: `http://127.0.0.1:${port}`,
    });
  });

  afterAll(() => {
    shell?.close();
  });

  it('has runnable blocks', () => {
    expect(steps.filter((s) => s.kind === 'shell').length).toBeGreaterThan(5);
    expect(steps.some((s) => s.kind === 'file')).toBe(true);
  });

  it('every block runs, in order, without an error', { timeout: 900_000 }, async () => {
    for (const step of steps) {
      if (step.kind === 'file') {
        fs.writeFileSync(path.join(work, step.name), step.content.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`));
        continue;
      }
      const where = `README.md:${step.line}`;
      const { stdout, stderr, failed } = await shell.run(step.line, shellCode(step.code, port));
      const context = `${where}\n--- block\n${step.code}--- stdout\n${stdout}--- stderr\n${stderr}`;
      // README_TEST_SHOW=1 prints what each block printed, to read it as a user would
      if (process.env.README_TEST_SHOW === '1') process.stdout.write(`\n=== ${context}\n`);
      expect(failed, `a command failed at ${context}`).toBe('');
      expect(stdout, `an error answer at ${context}`).not.toMatch(/"error":\{"code"/);
      expect(stderr + stdout, `a stack trace at ${context}`).not.toMatch(/\n\s+at .+\(.+:\d+:\d+\)/);
      const printed = printedJson(stdout);
      for (const expected of step.expected) {
        expect(
          printed.some((p) => sameShape(expected, p)),
          `${where}: the README shows ${JSON.stringify(expected)}, but nothing of that shape was printed\n${context}`,
        ).toBe(true);
      }
    }
  });
});
