// The four library-model metrics of SPEC.md over a 5-minute window (requests per minute, output
// tokens per second, time to first token, time per output token; each latency as mean, p50 and
// p99), and the Prometheus series behind /metrics, named in the spirit of vLLM's `vllm:*`.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { LlmModelStats } from './engine/index.js';
import { WINDOW_MS, latencySummary, type LatencySummary } from '../metrics/latency-summary.js';

interface Sample {
  at: number;
  completionTokens: number;
  ttftMs: number | null;
  tpotMs: number | null;
}

/** One replica's raw figures of a library model over the window, to be merged across replicas. */
export interface LibraryWindow {
  requests: number;
  samples: Array<{ completionTokens: number; ttftMs: number | null; tpotMs: number | null }>;
}

export interface LibraryMetrics {
  model_id: string;
  window_seconds: number;
  requests_5m: number;
  throughput_rpm_5m: number;
  token_throughput_tps: number;
  time_to_first_token_ms: LatencySummary;
  time_per_output_token_ms: LatencySummary;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 10, 30];

export class LlmMetrics {
  /** Arrival times of requests, and finished requests' figures, per model. */
  private readonly arrivals = new Map<string, number[]>();
  private readonly samples = new Map<string, Sample[]>();
  private readonly prom;

  constructor(
    registry: Registry,
    /** Engine stats of each live model, read when /metrics is scraped. */
    liveStats: () => Array<{ modelId: string; stats: LlmModelStats }>,
    private readonly clock: () => number = Date.now,
  ) {
    const labelNames = ['model'] as const;
    this.prom = {
      requests: new Counter({ name: 'platform:request_success_total', help: 'Finished LLM requests by finish reason', labelNames: ['model', 'finished_reason'] as const, registers: [registry] }),
      promptTokens: new Counter({ name: 'platform:prompt_tokens_total', help: 'Prompt tokens processed', labelNames, registers: [registry] }),
      generationTokens: new Counter({ name: 'platform:generation_tokens_total', help: 'Tokens generated', labelNames, registers: [registry] }),
      ttft: new Histogram({ name: 'platform:time_to_first_token_seconds', help: 'Request arrival to first generated token', labelNames, buckets: LATENCY_BUCKETS, registers: [registry] }),
      tpot: new Histogram({ name: 'platform:time_per_output_token_seconds', help: 'Mean gap between generated tokens of a request', labelNames, buckets: LATENCY_BUCKETS, registers: [registry] }),
      queue: new Histogram({ name: 'platform:request_queue_time_seconds', help: 'Time a request waited for admission', labelNames, buckets: LATENCY_BUCKETS, registers: [registry] }),
    };
    // Series read from each live model's engine stats at every scrape.
    const fromStats = (type: 'gauge' | 'counter', name: string, help: string, read: (s: LlmModelStats) => number) => {
      const config = { name, help, labelNames, registers: [registry] };
      const fill = (write: (labels: { model: string }, value: number) => void) => {
        for (const { modelId, stats } of liveStats()) write({ model: modelId }, read(stats));
      };
      if (type === 'gauge') {
        new Gauge({ ...config, collect() { this.reset(); fill((labels, v) => this.set(labels, v)); } });
      } else {
        new Counter({ ...config, collect() { this.reset(); fill((labels, v) => this.inc(labels, v)); } });
      }
    };
    fromStats('gauge', 'platform:num_requests_running', 'Sequences in the running batch', (s) => s.running);
    fromStats('gauge', 'platform:num_requests_waiting', 'Requests waiting for admission', (s) => s.waiting);
    fromStats('gauge', 'platform:kv_cache_usage_perc', 'Fraction of KV cache blocks in use', (s) => (s.kvBlocksTotal > 0 ? s.kvBlocksUsed / s.kvBlocksTotal : 0));
    // vLLM's prefix cache counters, in prompt tokens (the engine's totals since the model loaded).
    fromStats('counter', 'platform:prefix_cache_queries', 'Prompt tokens looked up in the prefix cache', (s) => s.prefixCacheQueries);
    fromStats('counter', 'platform:prefix_cache_hits', 'Prompt tokens found in the prefix cache', (s) => s.prefixCacheHits);
    // vLLM's speculative decoding counters (prompt-lookup drafts verified, and accepted).
    fromStats('counter', 'platform:spec_decode_num_draft_tokens', 'Draft tokens verified by speculative decoding', (s) => s.draftTokens);
    fromStats('counter', 'platform:spec_decode_num_accepted_tokens', 'Draft tokens accepted by speculative decoding', (s) => s.acceptedTokens);
  }

  requestArrived(modelId: string): void {
    const list = this.arrivals.get(modelId) ?? [];
    list.push(this.clock());
    this.arrivals.set(modelId, this.trim(list, (t) => t));
  }

  requestFinished(modelId: string, r: { finishReason: string; promptTokens: number; completionTokens: number; ttftMs: number | null; tpotMs: number | null; queuedMs: number }): void {
    const list = this.samples.get(modelId) ?? [];
    list.push({ at: this.clock(), completionTokens: r.completionTokens, ttftMs: r.ttftMs, tpotMs: r.tpotMs });
    this.samples.set(modelId, this.trim(list, (s) => s.at));
    const labels = { model: modelId };
    this.prom.requests.inc({ model: modelId, finished_reason: r.finishReason });
    this.prom.promptTokens.inc(labels, r.promptTokens);
    this.prom.generationTokens.inc(labels, r.completionTokens);
    if (r.ttftMs !== null) this.prom.ttft.observe(labels, r.ttftMs / 1000);
    if (r.tpotMs !== null) this.prom.tpot.observe(labels, r.tpotMs / 1000);
    this.prom.queue.observe(labels, r.queuedMs / 1000);
  }

  forget(modelId: string): void {
    this.arrivals.delete(modelId);
    this.samples.delete(modelId);
  }

  /** This host's raw figures of `modelId` over the window. */
  window(modelId: string): LibraryWindow {
    const arrivals = this.trim(this.arrivals.get(modelId) ?? [], (t) => t);
    const samples = this.trim(this.samples.get(modelId) ?? [], (s) => s.at);
    return { requests: arrivals.length, samples: samples.map(({ completionTokens, ttftMs, tpotMs }) => ({ completionTokens, ttftMs, tpotMs })) };
  }

  summary(modelId: string): LibraryMetrics {
    return summarizeLibrary(modelId, [this.window(modelId)]);
  }

  private trim<T>(list: T[], at: (x: T) => number): T[] {
    const since = this.clock() - WINDOW_MS;
    let drop = 0;
    while (drop < list.length && at(list[drop]!) < since) drop++;
    return drop === 0 ? list : list.slice(drop);
  }
}

/** The four figures of `modelId` from the windows of every replica that answered. */
export function summarizeLibrary(modelId: string, windows: readonly LibraryWindow[]): LibraryMetrics {
  const requests = windows.reduce((n, w) => n + w.requests, 0);
  const samples = windows.flatMap((w) => w.samples);
  const tokens = samples.reduce((n, s) => n + s.completionTokens, 0);
  return {
    model_id: modelId,
    window_seconds: WINDOW_MS / 1000,
    requests_5m: requests,
    throughput_rpm_5m: requests / 5,
    token_throughput_tps: tokens / (WINDOW_MS / 1000),
    time_to_first_token_ms: latencySummary(samples.flatMap((s) => (s.ttftMs === null ? [] : [s.ttftMs]))),
    time_per_output_token_ms: latencySummary(samples.flatMap((s) => (s.tpotMs === null ? [] : [s.tpotMs]))),
  };
}
