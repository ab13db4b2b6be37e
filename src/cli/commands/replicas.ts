// platform replicas: the replicas of the host on its database (GET /api/v1/replicas), one line
// each: state, whether deployments wait for it, heartbeat age, the configuration it has applied.
import type { Command } from 'commander';
import { clientFromEnv } from '../http-client.js';
import { formatTable } from '../table.js';

interface ReplicasJson {
  config_version: number;
  replicas: Array<{
    replica_id: string;
    address: string;
    state: string;
    live: boolean;
    heartbeat_age_ms: number;
    applied_version: number;
    deployments_served: number;
    library_models: string[];
    vector_collections?: Array<{ name: string; applied_seq: number; last_seq: number }>;
  }>;
}

/** "3 current", or the collections behind: "docs 1200/5000". */
function vectorCopies(copies: ReplicasJson['replicas'][number]['vector_collections']): string {
  if (!copies || copies.length === 0) return '-';
  const behind = copies.filter((c) => c.applied_seq < c.last_seq);
  if (behind.length === 0) return `${copies.length} current`;
  return behind.map((c) => `${c.name} ${c.applied_seq}/${c.last_seq}`).join(', ');
}

const age = (ms: number) => (ms < 10_000 ? `${(ms / 1000).toFixed(1)} s ago` : ms < 3_600_000 ? `${Math.round(ms / 60_000)} min ago` : `${Math.round(ms / 3_600_000)} h ago`);

export function registerReplicaCommands(program: Command): void {
  program
    .command('replicas')
    .description('list the replicas of the host on its database: state, heartbeat, configuration applied')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const res = await clientFromEnv().request<ReplicasJson>('GET', '/api/v1/replicas');
      if (opts.json) {
        process.stdout.write(JSON.stringify(res, null, 2) + '\n');
        return;
      }
      const rows = res.replicas.map((r) => [
        r.replica_id,
        r.state,
        r.live ? 'yes' : 'no',
        age(r.heartbeat_age_ms),
        r.applied_version === res.config_version ? `${r.applied_version} (newest)` : String(r.applied_version),
        String(r.deployments_served),
        r.library_models.map((m) => m.split('@')[0]).join(', ') || '-',
        vectorCopies(r.vector_collections),
        r.address,
      ]);
      process.stdout.write(formatTable(['REPLICA', 'STATE', 'LIVE', 'HEARTBEAT', 'CONFIG', 'DEPLOYMENTS', 'LIBRARY', 'VECTORS', 'ADDRESS'], rows));
    });
}
