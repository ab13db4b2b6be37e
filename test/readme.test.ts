// The README runs as written. Its shell blocks run in order in one bash session (variables carry
// from block to block, as in a user's terminal), the files it tells the user to save are saved,
// and a real host answers, started by the README's own `npm start`. A block fails the test when
// any command in it fails (curl included: an HTTP error is a failure), when it prints an error
// answer or a stack trace, or when an answer or header shown in a comment was not printed
// (test/helpers/readme-steps.ts: the rules). At the end the host's log must hold no error.
//
// What the test does for the user, and nothing more:
// - the working directory is a fresh directory that links the installed clone (node_modules,
//   dist, build, examples) instead of the clone itself, so that the README's ./data and ./models
//   stay out of the repository; `npm ci` and `npm test` are skipped (this clone is installed and
//   under test);
// - `npm start` runs in the background (a user's second terminal) on a port of its own choosing
//   (PORT=0) instead of 8080, which another test may hold: the port it prints in its start line
//   replaces `127.0.0.1:8080` in every later block and saved file, and PLATFORM_URL says the same;
// - `curl` is called with `--fail-with-body`, so that an HTTP error fails the command;
// - a tiny chat model and a tiny BERT embedding model wait in ~/Downloads under the GGUF names the
//   README uses (HOME is a directory of the test's own).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelBuilder } from './helpers/onnx-builder.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { bertModel } from './helpers/bert-model.js';
import { writeGguf } from './helpers/gguf-writer.js';
import { ROOT, tempDir } from './helpers/paths.js';
import { rng } from './helpers/random.js';
import { printedJson, readmeSteps, sameShape, type ReadmeStep } from './helpers/readme-steps.js';

const README = path.join(ROOT, 'README.md');
const STEP_TIMEOUT_MS = 180_000;
// TinyLlama's chat template (Zephyr style), so the tiny model formats messages as the real one does.
const ZEPHYR_TEMPLATE =
  "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '</s>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";

/**
 * The README's example models, examples/fraud-v{1,2,3}.onnx: score = sigmoid(x . w + b) over
 * [amount, age, country], one [N, 1] output named score. The test checks that the committed
 * files are exactly these; README_WRITE_EXAMPLES=1 writes them.
 */
function fraudModel(version: number): Uint8Array {
  const features = ['amount', 'age', 'country'];
  const r = rng(version);
  return new ModelBuilder({ opsets: { '': 13 }, producerName: 'test/readme.test.ts' })
    .input('x', 'float', ['N', features.length])
    .initializer('W', 'float', [features.length, 1], features.map(() => (r() - 0.5) * 0.02))
    .initializer('B', 'float', [1], [r() - 0.5])
    .node('Gemm', ['x', 'W', 'B'], ['logit'], {}, { name: 'linear' })
    .node('Sigmoid', ['logit'], ['score'], {}, { name: 'sigmoid' })
    .output('score', 'float', ['N', 1])
    .toBytes();
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
    this.send('curl() { command curl --fail-with-body "$@"; }');
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

  /** Stops the backgrounded host (its whole process group), waits for it, and ends the shell. */
  async close(): Promise<void> {
    const pidFile = path.join(this.cwd, '.readme/host.pid');
    if (fs.existsSync(pidFile)) {
      const group = Number(fs.readFileSync(pidFile, 'utf8'));
      const alive = () => {
        try {
          process.kill(-group, 0);
          return true;
        } catch {
          return false;
        }
      };
      if (alive()) process.kill(-group, 'SIGTERM');
      for (let waited = 0; alive() && waited < 15_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
      if (alive()) process.kill(-group, 'SIGKILL');
    }
    this.proc.kill();
  }
}

/** The shell code a block becomes: the set-up commands the test does itself, the port rewritten. */
function shellCode(code: string, port: number | undefined): string {
  const out: string[] = [];
  for (const line of code.split('\n')) {
    const command = line.replace(/#.*$/, '').trim();
    if (command === 'npm ci' || command === 'npm test') {
      out.push(': # the clone under test is installed');
    } else if (command === 'npm start') {
      out.push('PORT=0 npm start > .readme/host.log 2>&1 &');
      out.push('echo $! > .readme/host.pid');
      out.push("for _ in $(seq 1 300); do grep -q '^platform: listening on' .readme/host.log && break; kill -0 $(cat .readme/host.pid) || break; sleep 0.1; done");
      out.push("export PLATFORM_URL=$(sed -n 's/^platform: listening on \\(http:[^;]*\\);.*/\\1/p' .readme/host.log)");
      out.push('test -n "$PLATFORM_URL"');
    } else {
      out.push(port === undefined ? line : line.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`));
    }
  }
  return out.join('\n');
}

/** The port in the host's start line, once it has printed it. */
function hostPort(work: string): number | undefined {
  const log = path.join(work, '.readme/host.log');
  if (!fs.existsSync(log)) return undefined;
  const m = /^platform: listening on http:\/\/127\.0\.0\.1:(\d+);/m.exec(fs.readFileSync(log, 'utf8'));
  return m ? Number(m[1]) : undefined;
}

describe('the README, run as written', () => {
  let work: string;
  let shell: UserShell;
  let steps: ReadmeStep[];

  beforeAll(() => {
    steps = readmeSteps(README);
    work = tempDir('platform-readme-');
    for (const linked of ['node_modules', 'dist', 'build', 'build-cuda', 'examples', 'package.json', 'package-lock.json']) {
      if (fs.existsSync(path.join(ROOT, linked))) fs.symlinkSync(path.join(ROOT, linked), path.join(work, linked));
    }
    writeTinyChatModel(path.join(work, 'home/Downloads'), 'tinyllama-1.1b-chat-v1.0.Q4_K_M', { chatTemplate: ZEPHYR_TEMPLATE, nCtx: 2048 });
    writeGguf(path.join(work, 'home/Downloads/bge-small-en-v1.5-f16.gguf'), bertModel({ arch: 'bert', nEmbd: 64, nLayer: 2, nHead: 4, nFf: 128, nCtx: 128, pooling: 'cls', name: 'bge-small-en-v1.5' }).spec);
    const inherited = (process.env.PATH ?? '').split(':').filter((p) => !p.includes('node_modules'));
    shell = new UserShell(work, {
      PATH: inherited.join(':'),
      HOME: path.join(work, 'home'),
      LANG: process.env.LANG ?? 'C.UTF-8',
      TMPDIR: process.env.TMPDIR ?? '/tmp',
    });
  });

  afterAll(async () => {
    await shell?.close();
    // the links go; the clone they point at stays
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('examples/ holds exactly the example models the test describes', () => {
    for (const version of [1, 2, 3]) {
      const file = path.join(ROOT, `examples/fraud-v${version}.onnx`);
      if (process.env.README_WRITE_EXAMPLES === '1') fs.writeFileSync(file, fraudModel(version));
      expect(Buffer.from(fs.readFileSync(file)).equals(Buffer.from(fraudModel(version))), `${file} (README_WRITE_EXAMPLES=1 rewrites it)`).toBe(true);
    }
  });

  it('has runnable blocks', () => {
    expect(steps.filter((s) => s.kind === 'shell').length).toBeGreaterThan(5);
    expect(steps.some((s) => s.kind === 'file')).toBe(true);
  });

  it('every block runs, in order, without an error', { timeout: 900_000 }, async () => {
    for (const step of steps) {
      const port = hostPort(work);
      if (step.kind === 'file') {
        const content = port === undefined ? step.content : step.content.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
        fs.writeFileSync(path.join(work, step.name), content);
        continue;
      }
      const where = `README.md:${step.line}`;
      const { stdout, stderr, failed } = await shell.run(step.line, shellCode(step.code, port));
      const context = `${where}\n--- block\n${step.code}--- stdout\n${stdout}--- stderr\n${stderr}`;
      // README_TEST_SHOW=1 prints what each block printed, to read it as a user would
      if (process.env.README_TEST_SHOW === '1') process.stdout.write(`\n=== ${context}\n`);
      const hostLog = () => (fs.existsSync(path.join(work, '.readme/host.log')) ? fs.readFileSync(path.join(work, '.readme/host.log'), 'utf8').slice(-3000) : '');
      expect(failed, `a command failed at ${context}--- host log (tail)\n${hostLog()}`).toBe('');
      expect(stdout, `an error answer at ${context}`).not.toMatch(/"error":\{"code"/);
      expect(stderr + stdout, `a stack trace at ${context}`).not.toMatch(/^\s+at /m);
      const printed = printedJson(stdout);
      for (const { value, loose } of step.expected) {
        expect(
          printed.some((p) => sameShape(value, p, loose)),
          `${where}: the README shows ${JSON.stringify(value)}, but nothing like it was printed\n${context}`,
        ).toBe(true);
      }
      for (const header of step.headers) {
        expect(stdout.toLowerCase().split(/\r?\n/), `${where}: the README shows the header "${header}"\n${context}`).toContain(header);
      }
    }
    // Everything the README did went without an error in the host's own log.
    const errors = fs
      .readFileSync(path.join(work, '.readme/host.log'), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg?: string })
      .filter((entry) => entry.level >= 50);
    expect(errors, 'errors in the host log').toEqual([]);
  });
});
