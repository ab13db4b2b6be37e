// Per-variation figures over the last 5 minutes, from the request log: requests per minute,
// errors, and latency mean / p50 / p99.
import type { RequestLog } from './request-log.js';

export const WINDOW_MS = 5 * 60 * 1000;

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function variationMetrics(log: RequestLog, modelId: string, now: number) {
  const variations = log.window(modelId, now - WINDOW_MS).map((w) => {
    const sorted = [...w.latenciesMs].sort((a, b) => a - b);
    const mean = sorted.length === 0 ? null : sorted.reduce((a, b) => a + b, 0) / sorted.length;
    return {
      variation: w.variation,
      requests_5m: w.requests,
      throughput_rpm_5m: w.requests / 5,
      errors_5m: w.errors,
      latency_ms: { mean, p50: percentile(sorted, 50), p99: percentile(sorted, 99) },
    };
  });
  return { model_id: modelId, window_seconds: WINDOW_MS / 1000, variations };
}
