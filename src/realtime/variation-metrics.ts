// Per-variation figures over the last 5 minutes, from the request log: requests per minute,
// errors, and latency mean / p50 / p99. A shadow variation's copies get an entry of their own
// (`shadow: true`), so that a canary in shadow can be judged before it takes traffic.
import { WINDOW_MS, latencySummary } from '../metrics/latency-summary.js';
import type { RequestLog } from './request-log.js';

export function variationMetrics(log: RequestLog, modelId: string, now: number) {
  const variations = log.window(modelId, now - WINDOW_MS).map((w) => ({
    variation: w.variation,
    shadow: w.shadow,
    requests_5m: w.requests,
    throughput_rpm_5m: w.requests / 5,
    errors_5m: w.errors,
    latency_ms: latencySummary(w.latenciesMs),
  }));
  return { model_id: modelId, window_seconds: WINDOW_MS / 1000, variations };
}
