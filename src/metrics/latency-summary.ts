// Latency figures over a window, as every metrics route reports them: mean, and p50 / p99 by
// the nearest-rank method (the smallest sample with at least p % of the samples at or below it).

/** The window of the 5-minute figures of SPEC.md. */
export const WINDOW_MS = 5 * 60 * 1000;

export interface LatencySummary {
  mean: number | null;
  p50: number | null;
  p99: number | null;
}

export function latencySummary(values: readonly number[]): LatencySummary {
  if (values.length === 0) return { mean: null, p50: null, p99: null };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  return { mean: sorted.reduce((a, b) => a + b, 0) / sorted.length, p50: at(50), p99: at(99) };
}
