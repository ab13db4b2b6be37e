// LLM serving in the manner of vLLM's benchmark_serving: a request count, a concurrency, random
// prompt and output lengths; each request streams with include_usage and the client measures
// time to first token and time per output token. The same workload then runs in-process through
// the engine's TypeScript interface, and the ratios show what HTTP, SSE and the host cost. The
// server's own /metrics figures are printed beside the client's.
//
// The workload, the concurrency driver, the HTTP client and the figures are those of
// bench/llm/serving-client.ts (randomWordRequests, runConcurrently, sendStreamingChat, summarize),
// so both paths and the standalone client share one definition of each: TTFT is send to the first
// chunk carrying text (in-process: to the first token), TPOT is (E2E - TTFT) / (tokens - 1) as vLLM
// computes it, and the median and p99 are numpy.percentile's linear interpolation, as vLLM reports
// them (not nearest rank).
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
import { freePort } from '../test/helpers/free-port.js';
import { randomWordRequests, runConcurrently, sendStreamingChat, summarize, type RequestOutcome, type ServingRequest, type ServingSummary } from './llm/serving-client.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIM = Number(process.env.SERVING_BENCH_DIM ?? 512);
const LAYERS = Number(process.env.SERVING_BENCH_LAYERS ?? 6);
const REQUESTS = Number(process.env.SERVING_BENCH_REQUESTS ?? 48);
const CONCURRENCY = (process.env.SERVING_BENCH_CONCURRENCY ?? '1,16').split(',').map(Number);
const MAX_RUNNING = Math.max(16, ...CONCURRENCY);
const MODEL_FILE = process.env.SERVING_BENCH_MODEL;
const INSTANCE_TYPE = process.env.SERVING_BENCH_INSTANCE_TYPE === 'cuda' ? 'cuda' : 'cpu';
const TEMPERATURE = 0.8;

/** REQUESTS prompts of 16-128 random words asking for 16-96 tokens, each with its own sampling seed. */
function workload(seed: number): ServingRequest[] {
  return randomWordRequests(REQUESTS, { inputWords: [16, 128], maxTokens: [16, 96], seed }).map((request, i) => ({ ...request, seed: i + 1 }));
}

/** Throws with the first failure: figures over a partial run would mislead. */
function allSucceeded(label: string, outcomes: RequestOutcome[]): void {
  const failed = outcomes.filter((o) => !o.success);
  if (failed.length > 0) throw new Error(`${label}: ${failed.length} of ${outcomes.length} requests failed; the first: ${failed[0]!.error}`);
}

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

    // The deployment's own OpenAI surface (/v1/<deployment>/chat/completions), as before.
    const client = { baseUrl: `${url}/v1/bench`, model: 'bench', apiKey: accessToken, temperature: TEMPERATURE };

    const engine = await loadModel(file, { backend: INSTANCE_TYPE, maxRunningSequences: MAX_RUNNING, contextLength: 2048, ...(process.env.LLM_KV_CACHE_BYTES ? { kvCacheBytes: Number(process.env.LLM_KV_CACHE_BYTES) } : {}) });
    /** The request through the engine's TypeScript interface, timed as the client times a stream. */
    const inProcess = async (request: ServingRequest): Promise<RequestOutcome> => {
      const sent = performance.now();
      const prompt = tokenizer.encode(template.render([{ role: 'user', content: request.prompt }]), { addSpecial: true, parseSpecial: true });
      const gen = engine.generate(prompt, { maxTokens: request.maxTokens, temperature: TEMPERATURE, ...(request.seed !== undefined ? { seed: request.seed } : {}) });
      const itlMs: number[] = [];
      let first: number | null = null;
      let last = sent;
      let tokens = 0;
      for await (const _ of gen) {
        const at = performance.now();
        if (first === null) first = at;
        else itlMs.push(at - last);
        last = at;
        tokens++;
      }
      const e2eMs = performance.now() - sent;
      const ttftMs = first === null ? null : first - sent;
      const tpotMs = ttftMs !== null && tokens > 1 ? (e2eMs - ttftMs) / (tokens - 1) : null;
      return { success: true, error: null, generatedText: '', contentChunks: tokens, finishReason: null, promptTokens: prompt.length, outputTokens: tokens, ttftMs, itlMs, tpotMs, e2eMs };
    };

    const rows: string[][] = [];
    for (const c of CONCURRENCY) {
      const requests = workload(c);
      const http = await runConcurrently(requests, c, (request) => sendStreamingChat(client, request));
      allSucceeded(`http at concurrency ${c}`, http.results);
      const local = await runConcurrently(requests, c, inProcess);
      const a = summarize(http.results, http.durationMs);
      const b = summarize(local.results, local.durationMs);
      for (const [label, s] of [['http', a], ['in-process', b]] as Array<[string, ServingSummary]>) {
        rows.push([String(c), label, f(s.requestThroughput), f(s.outputThroughput), `${f(s.ttftMs.mean)} / ${f(s.ttftMs.median)} / ${f(s.ttftMs.p99)}`, `${f(s.tpotMs.mean)} / ${f(s.tpotMs.median)} / ${f(s.tpotMs.p99)}`]);
      }
      rows.push([String(c), 'http / in-process', `${f((a.requestThroughput / b.requestThroughput) * 100)} %`, `${f((a.outputThroughput / b.outputThroughput) * 100)} %`, `${f((a.ttftMs.mean / b.ttftMs.mean) * 100)} %`, `${f((a.tpotMs.mean / b.tpotMs.mean) * 100)} %`]);
    }
    await engine.unload();
    const server = (await (await fetch(`${url}/api/v1/models/bench/metrics`, { headers: auth })).json()) as Record<string, any>;

    // p50 and p99: numpy.percentile's linear interpolation (serving-client's summarize), as vLLM reports.
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
