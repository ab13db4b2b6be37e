// The serving-benchmark client of bench/llm/serving-client.ts (vLLM's benchmark_serving,
// "openai-chat" backend) against the real host's root surface at concurrency 4: every request
// completes, its streamed text and token count agree with the same request answered whole, and its
// timings are consistent (never judged by their size). Then its CLI entry, and its failures.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { percentile, randomWordRequests, runConcurrently, runServingBenchmark, sendStreamingChat, summarize, type ServingRequest } from '../bench/llm/serving-client.js';
import { apiClient, type Api } from './helpers/api.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { ROOT, tempDir } from './helpers/paths.js';

let host: TestHost;
let api: Api;
let token: string;

beforeAll(async () => {
  const modelsDir = tempDir();
  writeTinyChatModel(modelsDir, 'tiny-chat');
  host = await listen(await startInProcessHost({ MODELS_DIR: modelsDir, LLM_CONTEXT_LENGTH: '256', LLM_MAX_RUNNING_SEQUENCES: '8' }));
  token = (await tokenFor(host)).token;
  api = apiClient(host.url, token);
  expect((await api('POST', '/api/v1/library/deployments', { name: 'tiny-chat', model_id: 'tiny' })).status).toBe(202);
  for (;;) {
    const dep = await api<{ status: string; reason: string | null }>('GET', '/api/v1/library/deployments/tiny');
    if (dep.body.status === 'LIVE') break;
    expect(dep.body.status, dep.body.reason ?? '').not.toBe('FAILED');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
});
afterAll(async () => {
  await host.close();
});

/** The same request answered whole, greedy as the client sends it. */
async function whole(request: ServingRequest): Promise<{ text: string; usage: { prompt_tokens: number; completion_tokens: number }; finish: string }> {
  const res = await api<any>('POST', '/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: request.prompt }], temperature: 0, max_tokens: request.maxTokens });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { text: res.body.choices[0].message.content, usage: res.body.usage, finish: res.body.choices[0].finish_reason };
}

/** Runs the CLI entry through tsx, as `node --import tsx bench/llm/serving-client.ts` does. */
function runClientCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/llm/serving-client.ts'), ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c));
  proc.stderr.on('data', (c: Buffer) => (stderr += c));
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('the serving-benchmark client', () => {
  it('completes every request at concurrency 4, each in agreement with its whole answer', async () => {
    const requests = randomWordRequests(8, { inputWords: 12, maxTokens: 10, seed: 7 });
    const run = await runServingBenchmark({ baseUrl: `${host.url}/v1`, model: 'tiny', apiKey: token, concurrency: 4, requests });
    expect(run.outcomes).toHaveLength(8);
    for (const [i, o] of run.outcomes.entries()) {
      expect(o.error, `request ${i}`).toBeNull();
      expect(o.success).toBe(true);
      const reference = await whole(requests[i]!);
      expect(o.generatedText).toBe(reference.text);
      expect(o.promptTokens).toBe(reference.usage.prompt_tokens);
      expect(o.outputTokens).toBe(reference.usage.completion_tokens);
      expect(o.finishReason).toBe(reference.finish);
      expect(o.outputTokens!).toBeLessThanOrEqual(10);
      // A chunk carries the text of one token at most (some tokens carry none yet).
      expect(o.contentChunks).toBeLessThanOrEqual(o.outputTokens!);
      expect(o.itlMs).toHaveLength(Math.max(0, o.contentChunks - 1));
      expect(o.itlMs.every((gap) => gap >= 0)).toBe(true);
      if (o.contentChunks > 0) {
        expect(o.ttftMs!).toBeGreaterThan(0);
        expect(o.ttftMs!).toBeLessThanOrEqual(o.e2eMs);
      }
      if (o.outputTokens! > 1 && o.ttftMs !== null) expect(o.tpotMs).toBeCloseTo((o.e2eMs - o.ttftMs) / (o.outputTokens! - 1), 6);
    }
    const s = run.summary;
    expect(s.completed).toBe(8);
    expect(s.failed).toBe(0);
    expect(s.totalOutputTokens).toBe(run.outcomes.reduce((n, o) => n + o.outputTokens!, 0));
    expect(s.totalInputTokens).toBe(run.outcomes.reduce((n, o) => n + o.promptTokens!, 0));
    expect(s.requestThroughput).toBeCloseTo(8 / (s.durationMs / 1000), 6);
    expect(s.ttftMs.median).toBeLessThanOrEqual(s.e2eMs.p99);
    expect(s.e2eMs.median).toBeLessThanOrEqual(s.e2eMs.p99);
  });

  it('counts a refused request as failed, with the reason, and leaves it out of the figures', async () => {
    const run = await runServingBenchmark({ baseUrl: `${host.url}/v1`, model: 'nobody', apiKey: token, concurrency: 2, requests: randomWordRequests(2, { inputWords: 4, maxTokens: 4 }) });
    expect(run.outcomes.map((o) => o.success)).toEqual([false, false]);
    expect(run.outcomes[0]!.error).toMatch(/^HTTP 404: .*model \\"nobody\\" does not exist/);
    expect(run.summary).toMatchObject({ completed: 0, failed: 2, totalOutputTokens: 0 });
    expect(Number.isNaN(run.summary.ttftMs.mean)).toBe(true);
  });

  it('summarizes with numpy-style percentiles', () => {
    const outcome = (e2eMs: number) => ({ success: true, error: null, generatedText: '', contentChunks: 2, finishReason: 'length', promptTokens: 3, outputTokens: 2, ttftMs: e2eMs / 2, itlMs: [e2eMs / 2], tpotMs: e2eMs / 2, e2eMs });
    const s = summarize([10, 20, 30, 40].map(outcome), 1000);
    expect(s.e2eMs.mean).toBe(25);
    expect(s.e2eMs.median).toBe(25);
    expect(s.e2eMs.p99).toBeCloseTo(39.7, 9);
    expect(s).toMatchObject({ completed: 4, totalInputTokens: 12, totalOutputTokens: 8, requestThroughput: 4, outputThroughput: 8, totalTokenThroughput: 20 });
    // numpy.percentile(range(1, 101), 99) == 99.01; nearest rank would say 99.
    expect(percentile(Array.from({ length: 100 }, (_, i) => i + 1), 99)).toBeCloseTo(99.01, 9);
    expect(percentile([5], 99)).toBe(5);
    expect(Number.isNaN(percentile([], 50))).toBe(true);
  });

  it('draws prompt and output lengths from inclusive ranges, the same for the same seed', () => {
    const a = randomWordRequests(200, { inputWords: [3, 6], maxTokens: [10, 12], seed: 3 });
    expect(randomWordRequests(200, { inputWords: [3, 6], maxTokens: [10, 12], seed: 3 })).toEqual(a);
    expect(randomWordRequests(200, { inputWords: [3, 6], maxTokens: [10, 12], seed: 4 })).not.toEqual(a);
    expect(new Set(a.map((r) => r.prompt.split(' ').length))).toEqual(new Set([3, 4, 5, 6]));
    expect(new Set(a.map((r) => r.maxTokens))).toEqual(new Set([10, 11, 12]));
    const fixed = randomWordRequests(3, { inputWords: 5, maxTokens: 7 });
    expect(fixed.every((r) => r.prompt.split(' ').length === 5 && r.maxTokens === 7 && r.seed === undefined)).toBe(true);
  });

  it('runs at most `concurrency` calls at once and returns results in item order', async () => {
    let inFlight = 0;
    let most = 0;
    const { results, durationMs } = await runConcurrently([30, 5, 20, 1, 10, 2, 8], 3, async (ms, i) => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, ms));
      inFlight--;
      return `${i}:${ms}`;
    });
    expect(most).toBe(3);
    expect(results).toEqual(['0:30', '1:5', '2:20', '3:1', '4:10', '5:2', '6:8']);
    expect(durationMs).toBeGreaterThan(0);
    await expect(runConcurrently([1], 0, async () => 1)).rejects.toThrow(/concurrency must be a positive integer, got 0/);
  });

  it('sends a request\'s seed: the same seed samples the same text', async () => {
    const [request] = randomWordRequests(1, { inputWords: 8, maxTokens: 12, seed: 11 });
    const options = { baseUrl: `${host.url}/v1`, model: 'tiny', apiKey: token, temperature: 1.5 };
    const first = await sendStreamingChat(options, { ...request!, seed: 42 });
    const again = await sendStreamingChat(options, { ...request!, seed: 42 });
    expect(first.error).toBeNull();
    expect(again.generatedText).toBe(first.generatedText);
    expect(again.outputTokens).toBe(first.outputTokens);
  });
});

describe('its CLI entry', () => {
  it('prints the figures for a base URL, model, concurrency and request count', async () => {
    const res = await runClientCli(['--base-url', `${host.url}/v1`, '--model', 'tiny', '--concurrency', '2', '--requests', '4', '--input-words', '8', '--max-tokens', '6', '--json'], { OPENAI_API_KEY: token });
    expect(res.code, res.stderr).toBe(0);
    const summary = JSON.parse(res.stdout) as { completed: number; failed: number; totalOutputTokens: number };
    expect(summary).toMatchObject({ completed: 4, failed: 0 });
    expect(summary.totalOutputTokens).toBeGreaterThan(0);
    const table = await runClientCli(['--base-url', `${host.url}/v1`, '--model', 'tiny', '--api-key', token, '--requests', '2', '--input-words', '8', '--max-tokens', '4']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^Successful requests:\s+2$/m);
    expect(table.stdout).toMatch(/^Median TTFT \(ms\):\s+[\d.]+$/m);
  });

  it('exits 1 when requests fail and 2 on bad arguments', async () => {
    const failed = await runClientCli(['--base-url', `${host.url}/v1`, '--model', 'tiny', '--api-key', 'wrong', '--requests', '1']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/1 request\(s\) failed; the first: HTTP 401/);
    const bad = await runClientCli(['--model', 'tiny', '--concurrency', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--base-url is required/);
    expect(bad.stderr).toMatch(/--concurrency must be an integer >= 1, got 0/);
  });
});
