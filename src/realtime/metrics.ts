// Prometheus metrics of the predict path: requests, latency and batch sizes per model and
// variation.
import { Counter, Histogram, type Registry } from 'prom-client';

export interface PredictMetrics {
  requests: Counter<'model' | 'variation' | 'status'>;
  latency: Histogram<'model' | 'variation'>;
  batchRows: Histogram<'build'>;
}

export function createPredictMetrics(registry: Registry): PredictMetrics {
  return {
    requests: new Counter({
      name: 'predict_requests_total',
      help: 'Predict requests by model, variation and HTTP status',
      labelNames: ['model', 'variation', 'status'] as const,
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'predict_request_duration_seconds',
      help: 'Predict latency from the parsed request to the answer, by model and variation',
      labelNames: ['model', 'variation'] as const,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    batchRows: new Histogram({
      name: 'tabular_batch_rows',
      help: 'Rows per native executor call, by build',
      labelNames: ['build'] as const,
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096],
      registers: [registry],
    }),
  };
}
