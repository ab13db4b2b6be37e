// platform metrics <model-id>: a library model's four figures, or a realtime model's requests,
// errors and latency per variation over 5 minutes, shadow copies on rows of their own.
import type { Command } from 'commander';
import { clientFromEnv } from '../http-client.js';
import { formatTable } from '../table.js';

interface Latency {
  mean: number | null;
  p50: number | null;
  p99: number | null;
}

/** Of the live replicas, how many gave their figures (the figures are their sum). */
interface ReplicasAnswered {
  replicas?: { answered: number; total: number };
}

interface LibraryMetricsJson extends ReplicasAnswered {
  throughput_rpm_5m: number;
  token_throughput_tps: number;
  time_to_first_token_ms: Latency;
  time_per_output_token_ms: Latency;
}

interface RealtimeMetricsJson extends ReplicasAnswered {
  variations: Array<{ variation: string; shadow: boolean; requests_5m: number; throughput_rpm_5m: number; errors_5m: number; latency_ms: Latency }>;
}

const ms = (v: number | null) => (v === null ? '-' : v.toFixed(2));

function libraryTable(res: LibraryMetricsJson): string {
  const t = res.time_to_first_token_ms;
  const p = res.time_per_output_token_ms;
  return formatTable(
    ['METRIC', 'VALUE', 'MEAN', 'P50', 'P99'],
    [
      ['average throughput (5 min)', `${res.throughput_rpm_5m.toFixed(1)} rpm`, '', '', ''],
      ['total token throughput', `${res.token_throughput_tps.toFixed(2)} tok/s`, '', '', ''],
      ['time to first token (ms)', '', ms(t.mean), ms(t.p50), ms(t.p99)],
      ['time per output token (ms)', '', ms(p.mean), ms(p.p50), ms(p.p99)],
    ],
  );
}

function variationTable(res: RealtimeMetricsJson): string {
  const rows = res.variations.map((v) => [
    v.variation,
    // A shadow's figures are the copies it was sent, which never reached a caller.
    v.shadow ? 'shadow' : 'routed',
    v.throughput_rpm_5m.toFixed(1),
    String(v.requests_5m),
    String(v.errors_5m),
    ms(v.latency_ms.mean),
    ms(v.latency_ms.p50),
    ms(v.latency_ms.p99),
  ]);
  return formatTable(['VARIATION', 'TRAFFIC', 'RPM (5M)', 'REQUESTS', 'ERRORS', 'MEAN MS', 'P50 MS', 'P99 MS'], rows);
}

export function registerMetricsCommand(program: Command): void {
  program
    .command('metrics')
    .description("a model's metrics over the last 5 minutes: the four library metrics, or predict metrics per variation (shadows included)")
    .argument('<model-id>')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const res = await clientFromEnv().request<LibraryMetricsJson | RealtimeMetricsJson>('GET', `/api/v1/models/${encodeURIComponent(id)}/metrics`);
      if (opts.json) {
        process.stdout.write(JSON.stringify(res, null, 2) + '\n');
        return;
      }
      // Several replicas: say whose figures these are (a replica that did not answer is left out).
      const r = res.replicas;
      const whose = r && r.total > 1 ? `figures of ${r.answered} of ${r.total} replicas\n` : '';
      if (!('variations' in res)) {
        process.stdout.write(libraryTable(res) + whose);
        return;
      }
      if (res.variations.length === 0) process.stderr.write(`no predict requests to ${id} in the last 5 minutes\n`);
      else process.stdout.write(variationTable(res) + whose);
    });
}
