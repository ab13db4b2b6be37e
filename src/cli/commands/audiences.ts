// platform audiences create | list | get | update | delete.
import type { Command } from 'commander';
import { clientFromEnv } from '../http-client.js';
import { formatTable, isoTime } from '../table.js';
import { readYamlFile } from '../yaml-file.js';

interface AudienceJson {
  id: string;
  name: string;
  description: string;
  conditions: { unary: unknown[]; binary: unknown[] };
  created_at: number;
}

export function registerAudienceCommands(program: Command): void {
  const audiences = program.command('audiences').description('audiences: header conditions that route traffic to variations');

  audiences
    .command('create')
    .description('create the audiences of a YAML file and print their ids, one per line')
    .requiredOption('--from-file <file>', 'audience.yaml (api_version: v1, spec.audiences: [...])')
    .action(async (opts: { fromFile: string }) => {
      const body = readYamlFile(opts.fromFile);
      const res = await clientFromEnv().request<{ audiences: AudienceJson[] }>('POST', '/api/v1/audiences', { body });
      for (const a of res.audiences) process.stdout.write(`${a.id}\n`);
    });

  audiences
    .command('list')
    .description('list audiences')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const res = await clientFromEnv().request<{ audiences: AudienceJson[] }>('GET', '/api/v1/audiences');
      if (opts.json) {
        process.stdout.write(JSON.stringify(res.audiences, null, 2) + '\n');
        return;
      }
      const rows = res.audiences.map((a) => [a.id, a.name, String(a.conditions.unary.length + a.conditions.binary.length), isoTime(a.created_at), a.description]);
      process.stdout.write(formatTable(['ID', 'NAME', 'CONDITIONS', 'CREATED', 'DESCRIPTION'], rows));
    });

  audiences
    .command('get')
    .description('show an audience')
    .argument('<audience-id>')
    .action(async (id: string) => {
      const res = await clientFromEnv().request<AudienceJson>('GET', `/api/v1/audiences/${encodeURIComponent(id)}`);
      process.stdout.write(JSON.stringify(res, null, 2) + '\n');
    });

  audiences
    .command('update')
    .description('replace an audience with the one audience of a YAML file')
    .argument('<audience-id>')
    .requiredOption('--from-file <file>', 'audience.yaml with one audience')
    .action(async (id: string, opts: { fromFile: string }) => {
      const body = readYamlFile(opts.fromFile);
      const res = await clientFromEnv().request<AudienceJson>('PUT', `/api/v1/audiences/${encodeURIComponent(id)}`, { body });
      process.stdout.write(`${res.id}\n`);
    });

  audiences
    .command('delete')
    .description('delete an audience that no deployment uses')
    .argument('<audience-id>')
    .action(async (id: string) => {
      await clientFromEnv().request('DELETE', `/api/v1/audiences/${encodeURIComponent(id)}`);
      process.stdout.write(`deleted ${id}\n`);
    });
}
