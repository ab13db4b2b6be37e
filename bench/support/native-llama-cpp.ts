// llama.cpp built natively for this machine (GGML_NATIVE=ON: -march=native), beside the prebuilt
// one node-llama-cpp ships: its llama-bench gives llm.bench.ts a second, faster llama.cpp column,
// and its llama-quantize makes the mixed-recipe files (Q4_K_M, Q5_K_M, Q3_K_M).
//
// Found in, in order: $LLAMA_CPP_BIN_DIR (a directory holding llama-bench and llama-quantize, any
// build), then bench/out/llama.cpp-native/build/bin (what `build` below leaves). Built from the
// source node-llama-cpp carries (node_modules/node-llama-cpp/llama/gitRelease.bundle, a git bundle
// of the llama.cpp release it was built from), so both columns are the same llama.cpp code:
//
//   npm run bench:llama-cpp -- build     # clone + cmake + build (about 15 min on 2 cores, nice 19)
//   npm run bench:llama-cpp              # prints what is found
//
// Nothing is downloaded; bench/out/ is git-ignored.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
export const NATIVE_LLAMA_CPP_DIR = path.join(ROOT, 'bench', 'out', 'llama.cpp-native');
const SOURCE_DIR = path.join(NATIVE_LLAMA_CPP_DIR, 'src');
const BUILD_DIR = path.join(NATIVE_LLAMA_CPP_DIR, 'build');
const BUILD_INFO = path.join(NATIVE_LLAMA_CPP_DIR, 'build-info.json');
const TARGETS = ['llama-bench', 'llama-quantize'];

export interface NativeLlamaCpp {
  binDir: string;
  llamaBench: string;
  llamaQuantize: string;
  /** Where it came from: "LLAMA_CPP_BIN_DIR" or "bench/out/llama.cpp-native". */
  source: string;
  /** What `build` recorded (commit, tag, flags, date), when it built this one. */
  info?: BuildInfo;
}

export interface BuildInfo {
  commit: string;
  tag: string;
  nodeLlamaCppVersion: string;
  cmakeFlags: string[];
  builtAt: string;
  buildSeconds: number;
}

/** node-llama-cpp's llama/ directory (bundle + release info), or null. */
function nodeLlamaCppLlamaDir(): string | null {
  for (const dir of ['scripts/oracle', 'bench/peer']) {
    const d = path.join(ROOT, dir, 'node_modules', 'node-llama-cpp', 'llama');
    if (existsSync(path.join(d, 'gitRelease.bundle'))) return d;
  }
  return null;
}

function withBinaries(binDir: string, source: string): NativeLlamaCpp | null {
  const llamaBench = path.join(binDir, 'llama-bench');
  const llamaQuantize = path.join(binDir, 'llama-quantize');
  if (!existsSync(llamaBench) || !existsSync(llamaQuantize)) return null;
  return { binDir, llamaBench, llamaQuantize, source };
}

/** The native build to use, or null (then the bench skips its column). */
export function findNativeLlamaCpp(): NativeLlamaCpp | null {
  const fromEnv = process.env.LLAMA_CPP_BIN_DIR;
  if (fromEnv) {
    const found = withBinaries(path.resolve(fromEnv), 'LLAMA_CPP_BIN_DIR');
    if (!found) throw new Error(`LLAMA_CPP_BIN_DIR=${fromEnv} holds no llama-bench and llama-quantize`);
    return found;
  }
  const found = withBinaries(path.join(BUILD_DIR, 'bin'), 'bench/out/llama.cpp-native');
  if (found && existsSync(BUILD_INFO)) found.info = JSON.parse(readFileSync(BUILD_INFO, 'utf8')) as BuildInfo;
  return found;
}

/** Runs a command to completion, its output going to `log` (a file) or inherited; throws on failure. */
function run(cmd: string, args: string[], opts: { cwd?: string; niceness?: number } = {}): Promise<void> {
  const [file, argv] = opts.niceness !== undefined ? ['nice', ['-n', String(opts.niceness), cmd, ...args]] : [cmd, args];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { cwd: opts.cwd, stdio: 'inherit' });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}`))));
  });
}

/**
 * Clones node-llama-cpp's llama.cpp bundle into bench/out/llama.cpp-native/src (once) and builds
 * llama-bench and llama-quantize with -march=native at the lowest CPU priority (other work on the
 * machine goes first), using every core. Rerunning it rebuilds incrementally.
 */
export async function buildNativeLlamaCpp(log: (s: string) => void = console.log): Promise<NativeLlamaCpp> {
  const llamaDir = nodeLlamaCppLlamaDir();
  if (!llamaDir) throw new Error('node-llama-cpp (with llama/gitRelease.bundle) is not installed in scripts/oracle or bench/peer');
  const started = performance.now();
  mkdirSync(NATIVE_LLAMA_CPP_DIR, { recursive: true });
  if (!existsSync(path.join(SOURCE_DIR, 'CMakeLists.txt'))) {
    log(`cloning ${path.relative(ROOT, path.join(llamaDir, 'gitRelease.bundle'))} into ${path.relative(ROOT, SOURCE_DIR)}`);
    await run('git', ['clone', '--quiet', path.join(llamaDir, 'gitRelease.bundle'), SOURCE_DIR]);
  }
  const commit = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: SOURCE_DIR, encoding: 'utf8' }).stdout.trim();
  const release = JSON.parse(readFileSync(path.join(llamaDir, 'llama.cpp.info.json'), 'utf8')) as { tag?: string };
  const nlcVersion = (JSON.parse(readFileSync(path.join(llamaDir, '..', 'package.json'), 'utf8')) as { version: string }).version;
  const cmakeFlags = [
    '-DCMAKE_BUILD_TYPE=Release',
    '-DGGML_NATIVE=ON',
    '-DLLAMA_CURL=OFF',
    '-DLLAMA_BUILD_TESTS=OFF',
    '-DLLAMA_BUILD_EXAMPLES=OFF',
    '-DLLAMA_BUILD_SERVER=OFF',
  ];
  const jobs = String(os.cpus().length);
  log(`building llama.cpp ${commit.slice(0, 12)} (${release.tag ?? 'no tag'}) with ${cmakeFlags.join(' ')}, -j ${jobs}, nice 19`);
  await run('cmake', ['-S', SOURCE_DIR, '-B', BUILD_DIR, ...cmakeFlags], { niceness: 19 });
  await run('cmake', ['--build', BUILD_DIR, '--config', 'Release', '-j', jobs, '--target', ...TARGETS], { niceness: 19 });
  const info: BuildInfo = {
    commit,
    tag: release.tag ?? '',
    nodeLlamaCppVersion: nlcVersion,
    cmakeFlags,
    builtAt: new Date().toISOString(),
    buildSeconds: Math.round((performance.now() - started) / 1000),
  };
  writeFileSync(BUILD_INFO, `${JSON.stringify(info, null, 2)}\n`);
  const found = withBinaries(path.join(BUILD_DIR, 'bin'), 'bench/out/llama.cpp-native');
  if (!found) throw new Error(`the build finished but ${path.join(BUILD_DIR, 'bin')} has no llama-bench / llama-quantize`);
  return { ...found, info };
}

/** One llama-bench test (its JSON output has one object per test). */
interface LlamaBenchRecord {
  n_prompt: number;
  n_gen: number;
  n_threads: number;
  avg_ts: number;
  stddev_ts: number;
  samples_ts?: number[];
  build_commit?: string;
  cpu_info?: string;
}

export interface LlamaBenchResult {
  /** Prompt processing, tokens/s (mean of the repetitions, as llama-bench reports it). */
  prefillTokensPerSecond: number;
  prefillStddev: number;
  /** Generation of `decodeTokens` tokens from an empty context, tokens/s. */
  decodeTokensPerSecond: number;
  decodeStddev: number;
  seconds: number;
  records: LlamaBenchRecord[];
}

/** The first line of a failed process's output that says why, for one-line reports. */
function why(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  return lines.find((l) => /error|unknown|unsupported|failed|invalid/i.test(l)) ?? lines.at(-1) ?? '(no output)';
}

/**
 * llama-bench on `file`: pp<prefillTokens> and tg<decodeTokens>, `repetitions` times each, the
 * given thread count, CPU only, its JSON output parsed. Rejects with llama-bench's own reason
 * (e.g. a tensor type it cannot load).
 */
export function runLlamaBench(
  native: NativeLlamaCpp,
  file: string,
  o: { threads: number; prefillTokens: number; decodeTokens: number; repetitions: number },
): Promise<LlamaBenchResult> {
  const args = ['-m', file, '-t', String(o.threads), '-p', String(o.prefillTokens), '-n', String(o.decodeTokens), '-r', String(o.repetitions), '-ngl', '0', '-o', 'json'];
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(native.llamaBench, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`llama-bench exited with ${code}: ${why(err + out)}`));
      let records: LlamaBenchRecord[];
      try {
        records = JSON.parse(out) as LlamaBenchRecord[];
      } catch {
        return reject(new Error(`llama-bench printed no JSON: ${out.slice(0, 200)}`));
      }
      const pp = records.find((r) => r.n_prompt === o.prefillTokens && r.n_gen === 0);
      const tg = records.find((r) => r.n_gen === o.decodeTokens && r.n_prompt === 0);
      if (!pp || !tg) return reject(new Error(`llama-bench's JSON lacks pp${o.prefillTokens} or tg${o.decodeTokens}`));
      resolve({
        prefillTokensPerSecond: pp.avg_ts,
        prefillStddev: pp.stddev_ts,
        decodeTokensPerSecond: tg.avg_ts,
        decodeStddev: tg.stddev_ts,
        seconds: (performance.now() - started) / 1000,
        records,
      });
    });
  });
}

/** llama-quantize `src` into `dst` with a recipe name llama-quantize knows (Q4_K_M, Q5_K_M, ...). */
export async function llamaQuantize(native: NativeLlamaCpp, src: string, dst: string, recipe: string, threads: number): Promise<void> {
  const res = spawnSync(native.llamaQuantize, [src, dst, recipe, String(threads)], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (res.status !== 0) throw new Error(`llama-quantize ${recipe} exited with ${res.status}: ${why(res.stderr + res.stdout)}`);
}

// Command line: `build` builds (or rebuilds incrementally); no argument prints what is found.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const cmd = process.argv[2] ?? 'find';
  if (cmd === 'build') {
    const built = await buildNativeLlamaCpp();
    console.log(`built ${built.llamaBench} and ${built.llamaQuantize} (${built.info!.commit.slice(0, 12)}, ${built.info!.buildSeconds} s)`);
  } else if (cmd === 'find') {
    const found = findNativeLlamaCpp();
    console.log(found ? JSON.stringify(found, null, 2) : 'no native llama.cpp build (run `npm run bench:llama-cpp -- build`)');
  } else {
    console.error(`unknown command ${cmd} (build | find)`);
    process.exitCode = 2;
  }
}
