// A serving-benchmark client in the manner of vLLM's benchmarks/benchmark_serving.py with its
// "openai-chat" backend: raw fetch POSTs to <base URL>/chat/completions with stream: true,
// max_tokens and stream_options.include_usage, at most `concurrency` requests in flight; the SSE
// `data:` lines are parsed as they arrive, and each request yields its time to first token (TTFT),
// inter-token latencies (ITL), time per output token (TPOT) and end-to-end latency (E2E), with its
// output token count taken from the server's `usage`. It speaks plain OpenAI, so it measures this
// platform, vLLM, llama.cpp's server or Ollama alike. Two deliberate differences from vLLM's
// client: TTFT is taken at the first chunk that carries text (this host sends the role-only chunk
// before generating), and the prompts are random words from a seed (no data set to download).
//
//   node --import tsx bench/llm/serving-client.ts --base-url http://127.0.0.1:8080/v1 \
//     --model tinyllama --api-key "$TOKEN" --concurrency 4 --requests 32 --input-words 64 --max-tokens 64 [--json]
//
// bench/serving.bench.ts drives the same functions (randomWordRequests, runConcurrently,
// sendStreamingChat, summarize) for its HTTP path and its in-process comparison.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export interface ServingRequest {
  prompt: string;
  maxTokens: number;
  /** Sent as the request's `seed` when given (vLLM's client sends none). */
  seed?: number;
}

export interface RequestOutcome {
  success: boolean;
  /** Why the request failed (HTTP status and body, an error event, a network error), or null. */
  error: string | null;
  generatedText: string;
  /** Chunks that carried text; one chunk may hold several tokens, and a token may carry none. */
  contentChunks: number;
  finishReason: string | null;
  /** From the final `usage` chunk; null when the server sent none. */
  promptTokens: number | null;
  outputTokens: number | null;
  /** Send to the first chunk carrying text; null when none came. */
  ttftMs: number | null;
  /** Gaps between successive chunks carrying text. */
  itlMs: number[];
  /** (E2E - TTFT) / (output tokens - 1), as vLLM computes it; null below two tokens. */
  tpotMs: number | null;
  /** Send to the end of the stream. */
  e2eMs: number;
}

export interface ServingOptions {
  /** The OpenAI base URL, e.g. http://host/v1 (the client appends /chat/completions). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  concurrency: number;
  requests: ServingRequest[];
  /** 0 (greedy) unless given, as vLLM's client sends. */
  temperature?: number;
}

export interface Distribution {
  mean: number;
  median: number;
  p99: number;
}

export interface ServingSummary {
  completed: number;
  failed: number;
  durationMs: number;
  totalInputTokens: number;
  totalOutputTokens: number;
  requestThroughput: number;
  outputThroughput: number;
  totalTokenThroughput: number;
  ttftMs: Distribution;
  tpotMs: Distribution;
  itlMs: Distribution;
  e2eMs: Distribution;
}

export interface ServingRun {
  outcomes: RequestOutcome[];
  summary: ServingSummary;
}

const WORDS = ['the', 'a', 'little', 'girl', 'was', 'in', 'time', 'once', 'upon', 'there', 'and', 'to', 'world', 'hello', 'it', 'is', 'of', 'story', 'sun', 'tree'];

/** A count, or an inclusive range [min, max] drawn uniformly per request. */
export type Length = number | readonly [number, number];

/**
 * `count` requests of `inputWords` random words each, asking for `maxTokens` tokens, the same for
 * the same seed (a linear congruential generator; a fixed length draws nothing).
 */
export function randomWordRequests(count: number, options: { inputWords: Length; maxTokens: Length; seed?: number }): ServingRequest[] {
  let s = (options.seed ?? 0) >>> 0;
  const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
  const draw = (length: Length) => (typeof length === 'number' ? length : length[0] + Math.floor(next() * (length[1] - length[0] + 1)));
  return Array.from({ length: count }, () => {
    const prompt = Array.from({ length: draw(options.inputWords) }, () => WORDS[Math.floor(next() * WORDS.length)]).join(' ');
    return { prompt, maxTokens: draw(options.maxTokens) };
  });
}

/** One streamed chat completion, timed chunk by chunk. */
export async function sendStreamingChat(options: Omit<ServingOptions, 'concurrency' | 'requests'>, request: ServingRequest): Promise<RequestOutcome> {
  const outcome: RequestOutcome = {
    success: false,
    error: null,
    generatedText: '',
    contentChunks: 0,
    finishReason: null,
    promptTokens: null,
    outputTokens: null,
    ttftMs: null,
    itlMs: [],
    tpotMs: null,
    e2eMs: 0,
  };
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const body = {
    model: options.model,
    messages: [{ role: 'user', content: request.prompt }],
    temperature: options.temperature ?? 0,
    max_tokens: request.maxTokens,
    ...(request.seed !== undefined ? { seed: request.seed } : {}),
    stream: true,
    stream_options: { include_usage: true },
  };
  const sent = performance.now();
  let lastContentAt: number | null = null;
  try {
    const res = await fetch(`${options.baseUrl.replace(/\/+$/, '')}/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (!res.ok || !res.body) {
      outcome.error = `HTTP ${res.status}: ${await res.text()}`;
      outcome.e2eMs = performance.now() - sent;
      return outcome;
    }
    const decoder = new TextDecoder();
    let pending = '';
    let done = false;
    const onData = (data: string, at: number) => {
      if (data === '[DONE]') {
        done = true;
        return;
      }
      const event = JSON.parse(data) as {
        error?: { message?: string };
        choices?: Array<{ delta?: { content?: string | null }; finish_reason?: string | null }>;
        usage?: { prompt_tokens: number; completion_tokens: number } | null;
      };
      if (event.error) throw new Error(`error event: ${event.error.message ?? data}`);
      const choice = event.choices?.[0];
      const content = choice?.delta?.content;
      if (content) {
        if (lastContentAt === null) outcome.ttftMs = at - sent;
        else outcome.itlMs.push(at - lastContentAt);
        lastContentAt = at;
        outcome.generatedText += content;
        outcome.contentChunks++;
      }
      if (choice?.finish_reason) outcome.finishReason = choice.finish_reason;
      if (event.usage) {
        outcome.promptTokens = event.usage.prompt_tokens;
        outcome.outputTokens = event.usage.completion_tokens;
      }
    };
    for await (const bytes of res.body) {
      const at = performance.now();
      pending += decoder.decode(bytes, { stream: true });
      // An event may arrive split across reads: only whole lines are parsed.
      let newline: number;
      while ((newline = pending.indexOf('\n')) !== -1) {
        const line = pending.slice(0, newline).replace(/\r$/, '');
        pending = pending.slice(newline + 1);
        if (line.startsWith('data:')) onData(line.slice(5).trimStart(), at);
      }
    }
    outcome.e2eMs = performance.now() - sent;
    if (!done) throw new Error('the stream ended without [DONE]');
    if (outcome.outputTokens !== null && outcome.outputTokens > 1 && outcome.ttftMs !== null) {
      outcome.tpotMs = (outcome.e2eMs - outcome.ttftMs) / (outcome.outputTokens - 1);
    }
    outcome.success = true;
  } catch (err) {
    outcome.error = (err as Error).message;
    outcome.e2eMs = performance.now() - sent;
  }
  return outcome;
}

/**
 * Linear-interpolated percentile, as numpy.percentile's default and so as vLLM reports its
 * median and p99; NaN for no values.
 */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.min(sorted.length - 1, low + 1);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
}

export function distribution(values: number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.length === 0 ? NaN : sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return { mean, median: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/** vLLM's figures over the successful requests of a run that took `durationMs`. */
export function summarize(outcomes: RequestOutcome[], durationMs: number): ServingSummary {
  const ok = outcomes.filter((o) => o.success);
  const seconds = durationMs / 1000;
  const totalInputTokens = ok.reduce((n, o) => n + (o.promptTokens ?? 0), 0);
  const totalOutputTokens = ok.reduce((n, o) => n + (o.outputTokens ?? o.contentChunks), 0);
  return {
    completed: ok.length,
    failed: outcomes.length - ok.length,
    durationMs,
    totalInputTokens,
    totalOutputTokens,
    requestThroughput: ok.length / seconds,
    outputThroughput: totalOutputTokens / seconds,
    totalTokenThroughput: (totalInputTokens + totalOutputTokens) / seconds,
    ttftMs: distribution(ok.flatMap((o) => (o.ttftMs === null ? [] : [o.ttftMs]))),
    tpotMs: distribution(ok.flatMap((o) => (o.tpotMs === null ? [] : [o.tpotMs]))),
    itlMs: distribution(ok.flatMap((o) => o.itlMs)),
    e2eMs: distribution(ok.map((o) => o.e2eMs)),
  };
}

/**
 * Runs `one` over every item with at most `concurrency` calls in flight (each worker takes the next
 * item when its call ends); results are in item order, with the wall time of the whole run.
 */
export async function runConcurrently<T, R>(items: readonly T[], concurrency: number, one: (item: T, index: number) => Promise<R>): Promise<{ results: R[]; durationMs: number }> {
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`concurrency must be a positive integer, got ${concurrency}`);
  const results: R[] = new Array(items.length);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await one(items[i]!, i);
      }
    }),
  );
  return { results, durationMs: performance.now() - started };
}

/** Sends every request with at most `concurrency` in flight; outcomes are in request order. */
export async function runServingBenchmark(options: ServingOptions): Promise<ServingRun> {
  const { results: outcomes, durationMs } = await runConcurrently(options.requests, options.concurrency, (request) => sendStreamingChat(options, request));
  return { outcomes, summary: summarize(outcomes, durationMs) };
}

/** The summary as vLLM prints it, one figure a line. */
export function formatSummary(s: ServingSummary): string {
  const n = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : '-');
  const lines: Array<[string, string]> = [
    ['Successful requests', String(s.completed)],
    ['Failed requests', String(s.failed)],
    ['Benchmark duration (s)', n(s.durationMs / 1000)],
    ['Total input tokens', String(s.totalInputTokens)],
    ['Total generated tokens', String(s.totalOutputTokens)],
    ['Request throughput (req/s)', n(s.requestThroughput)],
    ['Output token throughput (tok/s)', n(s.outputThroughput)],
    ['Total token throughput (tok/s)', n(s.totalTokenThroughput)],
  ];
  for (const [label, d] of [
    ['TTFT', s.ttftMs],
    ['TPOT', s.tpotMs],
    ['ITL', s.itlMs],
    ['E2E', s.e2eMs],
  ] as const) {
    lines.push([`Mean ${label} (ms)`, n(d.mean)], [`Median ${label} (ms)`, n(d.median)], [`P99 ${label} (ms)`, n(d.p99)]);
  }
  const width = Math.max(...lines.map(([label]) => label.length)) + 2;
  return lines.map(([label, value]) => `${`${label}:`.padEnd(width)}${value}`).join('\n');
}

const USAGE = `usage: serving-client --base-url <http://host/v1> --model <id> [--api-key <token>] [--concurrency 4]
       [--requests 16] [--input-words 64] [--max-tokens 64] [--temperature 0] [--seed 0] [--json]
The API key defaults to $OPENAI_API_KEY. Exit status 1 when a request failed, 2 on bad arguments.`;

async function main(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        'base-url': { type: 'string' },
        model: { type: 'string' },
        'api-key': { type: 'string' },
        concurrency: { type: 'string', default: '4' },
        requests: { type: 'string', default: '16' },
        'input-words': { type: 'string', default: '64' },
        'max-tokens': { type: 'string', default: '64' },
        temperature: { type: 'string', default: '0' },
        seed: { type: 'string', default: '0' },
        json: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const problems: string[] = [];
  const text = (name: string) => {
    const v = values[name];
    if (typeof v !== 'string' || v === '') problems.push(`--${name} is required`);
    return String(v ?? '');
  };
  const count = (name: string, min: number) => {
    const v = Number(values[name]);
    if (!Number.isInteger(v) || v < min) problems.push(`--${name} must be an integer >= ${min}, got ${String(values[name])}`);
    return v;
  };
  const baseUrl = text('base-url');
  const model = text('model');
  const concurrency = count('concurrency', 1);
  const requests = count('requests', 1);
  const inputWords = count('input-words', 1);
  const maxTokens = count('max-tokens', 1);
  const seed = count('seed', 0);
  const temperature = Number(values.temperature);
  if (!Number.isFinite(temperature) || temperature < 0) problems.push(`--temperature must be a number >= 0, got ${String(values.temperature)}`);
  if (problems.length > 0) {
    console.error(`${problems.join('\n')}\n${USAGE}`);
    return 2;
  }
  const apiKey = (values['api-key'] as string | undefined) ?? process.env.OPENAI_API_KEY;
  const run = await runServingBenchmark({
    baseUrl,
    model,
    ...(apiKey ? { apiKey } : {}),
    concurrency,
    temperature,
    requests: randomWordRequests(requests, { inputWords, maxTokens, seed }),
  });
  if (values.json) console.log(JSON.stringify(run.summary));
  else console.log(`${model} at ${baseUrl}, concurrency ${concurrency}, ${requests} requests of ${inputWords} words, max_tokens ${maxTokens}\n${formatSummary(run.summary)}`);
  const failure = run.outcomes.find((o) => !o.success);
  if (failure) console.error(`${run.summary.failed} request(s) failed; the first: ${failure.error}`);
  return failure ? 1 : 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
