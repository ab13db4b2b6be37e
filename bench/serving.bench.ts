// LLM serving in the manner of vLLM's benchmark_serving: a request count, a concurrency, random
// prompt and output lengths; each request streams with include_usage and the client measures
// time to first token and time per output token. The same workload then runs in-process through
// the engine's TypeScript interface, and the ratios show what HTTP, SSE and the host cost. The
// server's own /metrics figures are printed beside the client's.
//
// The model is synthetic (random weights, Q8_0): SERVING_BENCH_DIM (512), _LAYERS (6); or an
// existing GGUF file: SERVING_BENCH_MODEL (e.g. the Llama-3-8B-shaped file that
// native/tools/platform-make-gguf writes for the CUDA runs). SERVING_BENCH_INSTANCE_TYPE: cpu
// (default) or cuda, for both paths. The workload: SERVING_BENCH_REQUESTS (48) per concurrency
// in SERVING_BENCH_CONCURRENCY (1,16), prompts of 16-128 words, outputs of 16-96 tokens.
// Needs `npm run build` (dist/) first.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../src/llm/engine/index.js';
import { readGguf } from '../src/llm/gguf/index.js';
import { Tokenizer } from '../src/llm/tokenizer/index.js';
import { ChatTemplate, DEFAULT_CHAT_TEMPLATE } from '../src/llm/chat/template.js';
import { tinyModel, writeGguf } from '../test/helpers/gguf-writer.js';
import { spmVocab } from '../test/helpers/llm-models.js';
import { freePort } from './support/free-port.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIM = Number(process.env.SERVING_BENCH_DIM ?? 512);
const LAYERS = Number(process.env.SERVING_BENCH_LAYERS ?? 6);
const REQUESTS = Number(process.env.SERVING_BENCH_REQUESTS ?? 48);
const CONCURRENCY = (process.env.SERVING_BENCH_CONCURRENCY ?? '1,16').split(',').map(Number);
const MAX_RUNNING = Math.max(16, ...CONCURRENCY);
const MODEL_FILE = process.env.SERVING_BENCH_MODEL;
const INSTANCE_TYPE = process.env.SERVING_BENCH_INSTANCE_TYPE === 'cuda' ? 'cuda' : 'cpu';
const WORDS = ['the', 'a', 'little', 'girl', 'was', 'in', 'time', 'once', 'upon', 'there', 'and', 'to', 'world', 'hello', 'it', 'is', 'of'];

interface Job {
  prompt: string;
  maxTokens: number;
  seed: number;
}

interface Measured {
  ttftMs: number;
  tpotMs: number | null;
  tokens: number;
}

function workload(seed: number): Job[] {
  let s = seed >>> 0;
  const r = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296);
  return Array.from({ length: REQUESTS }, (_, i) => ({
    prompt: Array.from({ length: 16 + Math.floor(r() * 112) }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' '),
    maxTokens: 16 + Math.floor(r() * 80),
    seed: i + 1,
  }));
}

/** Runs jobs with at most `concurrency` in flight; returns wall time and per-request figures. */
async function drive(jobs: Job[], concurrency: number, one: (job: Job) => Promise<Measured>): Promise<{ wallMs: number; results: Measured[] }> {
  const results: Measured[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < jobs.length) results.push(await one(jobs[next++]!));
    }),
  );
  return { wallMs: performance.now() - started, results };
}

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
  return { mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length), p50: at(50), p99: at(99) };
};
const f = (n: number) => (Number.isFinite(n) ? n.toFixed(n >= 100 ? 0 : 2) : '-');

export default async function run(): Promise<void> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'serving-bench-'));
  const modelsDir = MODEL_FILE ? path.dirname(path.resolve(MODEL_FILE)) : path.join(work, 'models');
  const file = MODEL_FILE ? path.resolve(MODEL_FILE) : path.join(modelsDir, 'bench.gguf');
  const name = path.basename(file); // the catalogue knows a model by its file name too
  if (!MODEL_FILE) {
    const model = tinyModel({ arch: 'llama', vocab: spmVocab(), nEmbd: DIM, nLayer: LAYERS, nHead: 8, nHeadKv: 4, nFf: DIM * 3, nCtx: 2048, seed: 5, weightType: 'Q8_0', embeddingType: 'Q8_0', name: 'bench', weightScale: 0.2 });
    (await import('node:fs')).mkdirSync(modelsDir, { recursive: true });
    writeGguf(file, model.spec);
  }
  const gguf = await readGguf(file);
  const tokenizer = Tokenizer.fromGguf(gguf);
  const template = new ChatTemplate(DEFAULT_CHAT_TEMPLATE, { bos_token: '<s>', eos_token: '</s>' });

  const dataDir = path.join(work, 'data');
  const key = execFileSync(process.execPath, [path.join(ROOT, 'dist/cli/main.js'), 'keys', 'create'], { env: { ...process.env, DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'ignore'] })
    .toString()
    .trim();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const host: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'dist/server/main.js')], {
    env: { ...process.env, DATA_DIR: dataDir, MODELS_DIR: modelsDir, PORT: String(port), LOG_LEVEL: 'warn', LLM_MAX_RUNNING_SEQUENCES: String(MAX_RUNNING), LLM_CONTEXT_LENGTH: '2048' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    for (let i = 0; !(await fetch(`${url}/healthz`).then((r) => r.ok, () => false)); i++) {
      if (i > 200) throw new Error('host did not start');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const tokenRes = await fetch(`${url}/api/v1/authentication/platform-api-key`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ platformApiKey: key }) });
    const { accessToken } = (await tokenRes.json()) as { accessToken: string };
    const auth = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' };
    const deployed = await fetch(`${url}/api/v1/library/deployments`, { method: 'POST', headers: auth, body: JSON.stringify({ name, model_id: 'bench', instance_type: INSTANCE_TYPE }) });
    if (!deployed.ok) throw new Error(`library deploy of ${name}: ${deployed.status} ${await deployed.text()}`);
    for (;;) {
      const res = await fetch(`${url}/api/v1/library/deployments/bench`, { headers: auth });
      if (!res.ok) throw new Error(`library deployment bench: ${res.status} ${await res.text()}`);
      const dep = (await res.json()) as { status: string; reason: string };
      if (dep.status === 'LIVE') break;
      if (dep.status === 'FAILED') throw new Error(dep.reason);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    const overHttp = async (job: Job): Promise<Measured> => {
      const sent = performance.now();
      const res = await fetch(`${url}/v1/bench/chat/completions`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: job.prompt }], max_tokens: job.maxTokens, temperature: 0.8, seed: job.seed, stream: true, stream_options: { include_usage: true } }),
      });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      let first: number | null = null;
      let last = sent;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const chunk = decoder.decode(value, { stream: true });
        text += chunk;
        if (chunk.includes('"content":"') && !chunk.includes('"role"')) {
          first ??= performance.now();
          last = performance.now();
        }
      }
      const usage = text.match(/"usage":\{"prompt_tokens":\d+,"completion_tokens":(\d+)/);
      const tokens = usage ? Number(usage[1]) : 0;
      const f0 = first ?? last;
      return { ttftMs: f0 - sent, tpotMs: tokens > 1 ? (last - f0) / (tokens - 1) : null, tokens };
    };

    const engine = await loadModel(file, { backend: INSTANCE_TYPE, maxRunningSequences: MAX_RUNNING, contextLength: 2048, ...(process.env.LLM_KV_CACHE_BYTES ? { kvCacheBytes: Number(process.env.LLM_KV_CACHE_BYTES) } : {}) });
    const inProcess = async (job: Job): Promise<Measured> => {
      const sent = performance.now();
      const prompt = tokenizer.encode(template.render([{ role: 'user', content: job.prompt }]), { addSpecial: true, parseSpecial: true });
      const gen = engine.generate(prompt, { maxTokens: job.maxTokens, temperature: 0.8, seed: job.seed });
      let first: number | null = null;
      let last = sent;
      let tokens = 0;
      for await (const _ of gen) {
        first ??= performance.now();
        last = performance.now();
        tokens++;
      }
      const f0 = first ?? last;
      return { ttftMs: f0 - sent, tpotMs: tokens > 1 ? (last - f0) / (tokens - 1) : null, tokens };
    };

    const rows: string[][] = [];
    for (const c of CONCURRENCY) {
      const jobs = workload(c);
      const http = await drive(jobs, c, overHttp);
      const local = await drive(jobs, c, inProcess);
      const summarize = (label: string, r: { wallMs: number; results: Measured[] }) => {
        const tokens = r.results.reduce((n, x) => n + x.tokens, 0);
        const ttft = stats(r.results.map((x) => x.ttftMs));
        const tpot = stats(r.results.flatMap((x) => (x.tpotMs === null ? [] : [x.tpotMs])));
        return { label, rps: r.results.length / (r.wallMs / 1000), tps: tokens / (r.wallMs / 1000), ttft, tpot };
      };
      const a = summarize('http', http);
      const b = summarize('in-process', local);
      for (const s of [a, b]) rows.push([String(c), s.label, f(s.rps), f(s.tps), `${f(s.ttft.mean)} / ${f(s.ttft.p50)} / ${f(s.ttft.p99)}`, `${f(s.tpot.mean)} / ${f(s.tpot.p50)} / ${f(s.tpot.p99)}`]);
      rows.push([String(c), 'http / in-process', `${f((a.rps / b.rps) * 100)} %`, `${f((a.tps / b.tps) * 100)} %`, `${f((a.ttft.mean / b.ttft.mean) * 100)} %`, `${f((a.tpot.mean / b.tpot.mean) * 100)} %`]);
    }
    await engine.unload();
    const server = (await (await fetch(`${url}/api/v1/models/bench/metrics`, { headers: auth })).json()) as Record<string, any>;

    const header = ['conc.', 'path', 'req/s', 'output tok/s', 'TTFT ms mean / p50 / p99', 'TPOT ms mean / p50 / p99'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => `| ${cells.map((x, i) => x.padStart(widths[i]!)).join(' | ')} |`;
    console.log(`model: ${MODEL_FILE ? file : `dim ${DIM}, ${LAYERS} layers, Q8_0`} on ${INSTANCE_TYPE}, ${REQUESTS} requests per run, prompts 16-128 words, outputs 16-96 tokens`);
    console.log(line(header));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const r of rows) console.log(line(r));
    console.log(
      `server /metrics over both HTTP runs: TTFT mean ${f(server.time_to_first_token_ms.mean)} ms, TPOT mean ${f(server.time_per_output_token_ms.mean)} ms, ${server.requests_5m} requests`,
    );
  } finally {
    host.kill('SIGTERM');
  }
}
