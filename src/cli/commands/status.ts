// platform status: is the host at PLATFORM_URL up, can this key talk to it, and what engine does
// it run?
import type { Command } from 'commander';
import type { EngineInfo } from '../../native/surface.js';
import { formatEngine } from '../engine-table.js';
import { clientFromEnv } from '../http-client.js';

export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description('check the host at PLATFORM_URL with PLATFORM_API_KEY and show its engine')
    .option('--json', 'print JSON: {status, engine}')
    .action(async (opts: { json?: boolean }) => {
      const client = clientFromEnv();
      const engine = await client.request<EngineInfo>('GET', '/api/v1/engine');
      const ready = await client.request<{ status: string }>('GET', '/readyz', { auth: false });
      if (opts.json) {
        process.stdout.write(JSON.stringify({ status: ready.status, engine }, null, 2) + '\n');
        return;
      }
      process.stdout.write(formatEngine(engine, [['status', ready.status], ['host', client.url]]));
    });
}
