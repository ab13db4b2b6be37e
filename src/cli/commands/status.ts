// platform status: is the host at PLATFORM_URL up, and can this key talk to it?
import type { Command } from 'commander';
import { clientFromEnv } from '../http-client.js';

export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description('check the host at PLATFORM_URL with PLATFORM_API_KEY and show its engine')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const client = clientFromEnv();
      const engine = await client.request<Record<string, unknown>>('GET', '/api/v1/engine');
      const ready = await client.request<{ status: string }>('GET', '/readyz', { auth: false });
      if (opts.json) {
        process.stdout.write(JSON.stringify({ status: ready.status, engine }, null, 2) + '\n');
        return;
      }
      process.stdout.write(`status: ${ready.status}\nengine: ${JSON.stringify(engine)}\n`);
    });
}
