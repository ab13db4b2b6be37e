// platform metrics <model-id>: per-variation requests, errors and latency over 5 minutes.
import type { Command } from 'commander';
import { clientFromEnv } from '../http-client.js';
import { formatTable } from '../table.js';

interface MetricsJson {
  variations?: Array<{ variation: string; requests_5m: number; throughput_rpm_5m: number; errors_5m: number; latency_ms: { mean: number | null; p50: number | null; p99: number | null } }>;
}

const ms = (v: number | null) => (v === null ? '-' : v.toFixed(2));

export function registerMetricsCommand(program: Command): void {
  program
    .command('metrics')
    .description("a model's metrics over the last 5 minutes")
    .argument('<model-id>')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const res = await clientFromEnv().request<MetricsJson>('GET', `/api/v1/models/${encodeURIComponent(id)}/metrics`);
      if (opts.json || !res.variations) {
        process.stdout.write(JSON.stringify(res, null, 2) + '\n');
        return;
      }
      const rows = res.variations.map((v) => [v.variation, v.throughput_rpm_5m.toFixed(1), String(v.requests_5m), String(v.errors_5m), ms(v.latency_ms.mean), ms(v.latency_ms.p50), ms(v.latency_ms.p99)]);
      process.stdout.write(formatTable(['VARIATION', 'RPM (5M)', 'REQUESTS', 'ERRORS', 'MEAN MS', 'P50 MS', 'P99 MS'], rows));
    });
}
