// One engine on one model file, in its own process (so that its resident memory is its own):
// started by bench/llm.bench.ts as
//   node --import tsx bench/llm-worker.ts '<WorkerJob JSON>'
// and answering with one line `RESULT <WorkerResult JSON>` on stdout, or, when the engine cannot
// load the file (a tensor type it does not support), `LOAD_ERROR <message JSON>` and exit status 3.
//
// Engines: "ours" (src/llm/engine) and "llama.cpp" (node-llama-cpp, loaded from the path the
// parent resolved; never a dependency of the project). Both run greedy decoding on the same
// token ids with the same thread count. Measurements, in order:
//   prefill:  one prompt of `prefillTokens` random tokens, logits of its last position only
//             (ours: model.logits(); llama.cpp: evaluateWithoutGeneratingNewTokens), median of
//             `prefillRepeats` runs, each on an empty context;
//   decode:   one sequence, a 16-token prompt, `decodeTokens` generated tokens: 1 / the median
//             time between two tokens (the prompt is not counted; a median, because on a shared
//             machine a few steps stall when another process takes a core);
//   batch B:  B sequences started together, each with its own 16-token prompt and
//             `batchDecodeTokens` tokens: the sum over the sequences of 1 / (median time between
//             two of its tokens), counting only the tokens after every sequence has its first one.
//   Both also come as plain means over the same windows (tokens / elapsed time), in `*Mean`.
//   memory:   VmHWM (peak resident set) and VmRSS / RssAnon / RssFile at the end, from
//             /proc/self/status. The weights are memory-mapped by both engines, so RssFile is
//             mostly the model file.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export interface WorkerJob {
  engine: 'ours' | 'llama.cpp';
  file: string;
  /** node-llama-cpp's dist/index.js (llama.cpp engine only). */
  llamaModule?: string;
  threads: number;
  contextSize: number;
  prefillTokens: number;
  prefillRepeats: number;
  decodeTokens: number;
  batches: number[];
  batchDecodeTokens: number;
}

export interface WorkerResult {
  engine: string;
  kernels?: string;
  loadSeconds: number;
  prefillTokensPerSecond: number;
  prefillSeconds: number[];
  decodeTokensPerSecond: number;
  batchTokensPerSecond: Record<string, number>;
  decodeTokensPerSecondMean: number;
  batchTokensPerSecondMean: Record<string, number>;
  /** Process CPU time (user + system) of each phase, all threads: a cost that does not depend on
   * how much of the machine other processes took (a spinning thread counts as busy). */
  cpuSeconds: { prefill: number; decode: number; batches: Record<string, number> };
  memory: { peakRssBytes: number; rssBytes: number; rssAnonBytes: number; rssFileBytes: number };
}

const PROMPT_TOKENS = 16;

function tokens(n: number, seed: number): number[] {
  let s = seed >>> 0;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out.push(3 + (s % 31997)); // skip <unk>, <s>, </s>
  }
  return out;
}

function medianOf(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function memory(): WorkerResult['memory'] {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { peakRssBytes: kb('VmHWM'), rssBytes: kb('VmRSS'), rssAnonBytes: kb('RssAnon'), rssFileBytes: kb('RssFile') };
}

/** Aggregate decode rate of streams given their token arrival times (ms): median-based and mean. */
function aggregateRate(times: number[][]): { median: number; mean: number } {
  const start = Math.max(...times.map((t) => t[0]!));
  const end = Math.max(...times.map((t) => t[t.length - 1]!));
  const count = times.reduce((n, t) => n + t.filter((x) => x > start).length, 0);
  let median = 0;
  for (const t of times) {
    const from = Math.max(0, t.findIndex((x) => x >= start));
    const gaps: number[] = [];
    for (let i = from + 1; i < t.length; i++) gaps.push(t[i]! - t[i - 1]!);
    if (gaps.length > 0) median += 1000 / medianOf(gaps);
  }
  return { median, mean: (count * 1000) / (end - start) };
}

/** What each engine has to provide. */
interface Runner {
  kernels?: string;
  prefill(prompt: number[]): Promise<void>;
  /** Streams maxTokens tokens for each prompt, concurrently; returns the arrival times. */
  decode(prompts: number[][], maxTokens: number): Promise<number[][]>;
  close(): Promise<void>;
}

async function oursRunner(job: WorkerJob): Promise<Runner> {
  const { loadModel } = await import('../src/llm/engine/index.js');
  const maxBatch = Math.max(1, ...job.batches);
  const model = await loadModel(job.file, {
    threads: job.threads,
    contextLength: job.contextSize,
    maxRunningSequences: maxBatch,
    maxBatchTokens: Math.max(512, maxBatch * PROMPT_TOKENS),
  });
  return {
    kernels: model.info().kernels,
    async prefill(prompt) {
      await model.logits(prompt);
    },
    async decode(prompts, maxTokens) {
      return Promise.all(
        prompts.map(async (p) => {
          const times: number[] = [];
          for await (const _ of model.generate(p, { maxTokens })) times.push(performance.now());
          return times;
        }),
      );
    },
    close: () => model.unload(),
  };
}

// The parts of node-llama-cpp's API used here.
interface NlcSequence {
  evaluate(tokens: number[], options?: { temperature?: number }): AsyncGenerator<number, void, void>;
  evaluateWithoutGeneratingNewTokens(tokens: number[]): Promise<void>;
  clearHistory(): Promise<void>;
}
interface NlcContext {
  getSequence(): NlcSequence;
  dispose(): Promise<void>;
}
interface NlcModel {
  createContext(o: object): Promise<NlcContext>;
  dispose(): Promise<void>;
}
interface NlcModule {
  getLlama(o: object): Promise<{ loadModel(o: object): Promise<NlcModel>; dispose(): Promise<void> }>;
  LlamaLogLevel: Record<string, unknown>;
}

async function llamaCppRunner(job: WorkerJob): Promise<Runner> {
  const nlc = (await import(pathToFileURL(job.llamaModule!).href)) as NlcModule;
  const llama = await nlc.getLlama({
    gpu: false,
    build: 'never',
    skipDownload: true,
    progressLogs: false,
    maxThreads: job.threads,
    logLevel: nlc.LlamaLogLevel.error,
  });
  const model = await llama.loadModel({ modelPath: job.file, gpuLayers: 0 });
  const threads = { ideal: job.threads, min: job.threads };
  let single: NlcContext | null = await model.createContext({ contextSize: job.contextSize, batchSize: 512, threads });
  const seq = single.getSequence();
  return {
    async prefill(prompt) {
      await seq.evaluateWithoutGeneratingNewTokens(prompt);
      await seq.clearHistory();
    },
    async decode(prompts, maxTokens) {
      const run = async (s: NlcSequence, p: number[]) => {
        const times: number[] = [];
        for await (const _ of s.evaluate(p, { temperature: 0 })) {
          times.push(performance.now());
          if (times.length >= maxTokens) break;
        }
        await s.clearHistory();
        return times;
      };
      if (prompts.length === 1 && single) return [await run(seq, prompts[0]!)];
      // A context with one KV region per sequence, each just big enough (contextSize is per sequence).
      if (single) {
        await single.dispose();
        single = null;
      }
      const ctx = await model.createContext({
        sequences: prompts.length,
        contextSize: Math.ceil((PROMPT_TOKENS + maxTokens + 1) / 256) * 256,
        batchSize: 512,
        threads,
      });
      try {
        const seqs = prompts.map(() => ctx.getSequence());
        return await Promise.all(prompts.map((p, i) => run(seqs[i]!, p)));
      } finally {
        await ctx.dispose();
      }
    },
    async close() {
      await single?.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '{}') as WorkerJob;
  const t0 = performance.now();
  let runner: Runner;
  try {
    runner = job.engine === 'ours' ? await oursRunner(job) : await llamaCppRunner(job);
  } catch (e) {
    process.stdout.write(`LOAD_ERROR ${JSON.stringify(e instanceof Error ? e.message : String(e))}\n`);
    process.exit(3); // stdout to a pipe is synchronous on Linux: the line is out; node-llama-cpp may hold handles open
  }
  const loadSeconds = (performance.now() - t0) / 1000;

  // Warm-up: pages in the whole mapped file, starts threads, sizes buffers.
  await runner.prefill(tokens(32, 99));
  await runner.decode([tokens(PROMPT_TOKENS, 98)], 2);

  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  const prefillSeconds: number[] = [];
  let c0 = cpu();
  for (let r = 0; r < job.prefillRepeats; r++) {
    const p = tokens(job.prefillTokens, 1000 + r);
    const s = performance.now();
    await runner.prefill(p);
    prefillSeconds.push((performance.now() - s) / 1000);
  }
  const cpuSeconds: WorkerResult['cpuSeconds'] = { prefill: (cpu() - c0) / job.prefillRepeats, decode: 0, batches: {} };
  c0 = cpu();
  const [single] = await runner.decode([tokens(PROMPT_TOKENS, 7)], job.decodeTokens);
  cpuSeconds.decode = cpu() - c0;
  const { median: decodeTokensPerSecond, mean: decodeTokensPerSecondMean } = aggregateRate([single!]);
  const batchTokensPerSecond: Record<string, number> = {};
  const batchTokensPerSecondMean: Record<string, number> = {};
  for (const b of job.batches) {
    const prompts = Array.from({ length: b }, (_, i) => tokens(PROMPT_TOKENS, 100 + i));
    c0 = cpu();
    const rate = aggregateRate(await runner.decode(prompts, job.batchDecodeTokens));
    batchTokensPerSecond[b] = rate.median;
    batchTokensPerSecondMean[b] = rate.mean;
    cpuSeconds.batches[b] = cpu() - c0;
  }
  const mem = memory();
  await runner.close();
  const result: WorkerResult = {
    engine: job.engine,
    ...(runner.kernels ? { kernels: runner.kernels } : {}),
    loadSeconds,
    prefillTokensPerSecond: job.prefillTokens / medianOf(prefillSeconds),
    prefillSeconds,
    decodeTokensPerSecond,
    batchTokensPerSecond,
    decodeTokensPerSecondMean,
    batchTokensPerSecondMean,
    cpuSeconds,
    memory: mem,
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

await main();
