// Per-variation figures over the last 5 minutes, from the request log: requests per minute,
// errors, and latency mean / p50 / p99; across replicas, from each one's window, merged. A shadow
// variation's copies get an entry of their own (`shadow: true`), so that a canary in shadow can be
// judged before it takes traffic.
import { WINDOW_MS, latencySummary } from '../metrics/latency-summary.js';
import type { VariationWindow } from './request-log.js';

/** The per-variation figures from the windows of every replica that answered, merged. */
export function summarizeVariations(modelId: string, windows: ReadonlyArray<readonly VariationWindow[]>) {
  const merged = new Map<string, VariationWindow>();
  for (const w of windows.flat()) {
    const key = `${w.shadow ? 1 : 0}\u0000${w.variation}`;
    const m = merged.get(key);
    if (!m) merged.set(key, { ...w, latenciesMs: [...w.latenciesMs] });
    else {
      m.requests += w.requests;
      m.errors += w.errors;
      m.latenciesMs.push(...w.latenciesMs);
    }
  }
  // In the order first seen (this replica's log orders them by shadow, then first request).
  const variations = [...merged.values()].map((w) => ({
    variation: w.variation,
    shadow: w.shadow,
    requests_5m: w.requests,
    throughput_rpm_5m: w.requests / 5,
    errors_5m: w.errors,
    latency_ms: latencySummary(w.latenciesMs),
  }));
  return { model_id: modelId, window_seconds: WINDOW_MS / 1000, variations };
}
