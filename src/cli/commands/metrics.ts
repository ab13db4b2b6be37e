// platform metrics <model-id>: per-variation requests, errors and latency over 5 minutes.
import type { Command } from 'commander';
import { clientFromEnv } from '../http-client.js';
import { formatTable } from '../table.js';

interface Latency {
  mean: number | null;
  p50: number | null;
  p99: number | null;
}

interface MetricsJson {
  throughput_rpm_5m?: number;
  token_throughput_tps?: number;
  time_to_first_token_ms?: Latency;
  time_per_output_token_ms?: Latency;
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
      if (!opts.json && res.time_to_first_token_ms && res.time_per_output_token_ms) {
        const t = res.time_to_first_token_ms;
        const p = res.time_per_output_token_ms;
        process.stdout.write(
          formatTable(
            ['METRIC', 'VALUE', 'MEAN', 'P50', 'P99'],
            [
              ['average throughput (5 min)', `${res.throughput_rpm_5m!.toFixed(1)} rpm`, '', '', ''],
              ['total token throughput', `${res.token_throughput_tps!.toFixed(2)} tok/s`, '', '', ''],
              ['time to first token (ms)', '', ms(t.mean), ms(t.p50), ms(t.p99)],
              ['time per output token (ms)', '', ms(p.mean), ms(p.p50), ms(p.p99)],
            ],
          ),
        );
        return;
      }
      if (opts.json || !res.variations) {
        process.stdout.write(JSON.stringify(res, null, 2) + '\n');
        return;
      }
      const rows = res.variations.map((v) => [v.variation, v.throughput_rpm_5m.toFixed(1), String(v.requests_5m), String(v.errors_5m), ms(v.latency_ms.mean), ms(v.latency_ms.p50), ms(v.latency_ms.p99)]);
      process.stdout.write(formatTable(['VARIATION', 'RPM (5M)', 'REQUESTS', 'ERRORS', 'MEAN MS', 'P50 MS', 'P99 MS'], rows));
    });
}
