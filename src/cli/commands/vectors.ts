// platform vectors collections create | list | get | delete: vector collections through the
// host's API (DESIGN.md section 2).
import { Command, InvalidArgumentError, Option } from 'commander';
import { clientFromEnv } from '../http-client.js';
// The response type is the service's own; a type-only import, so the CLI loads none of it.
import type { CollectionJson } from '../../vectors/service.js';
import { formatTable, isoTime } from '../table.js';

function positiveInteger(flag: string, max: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`${flag} must be a whole number`);
    const n = Number(value.trim());
    if (n < 1 || n > max) throw new InvalidArgumentError(`${flag} must be between 1 and ${max}`);
    return n;
  };
}

const path = (name: string) => `/api/v1/vectors/collections/${encodeURIComponent(name)}`;

function describe(c: CollectionJson): string {
  const lines = [
    `name:          ${c.name}`,
    `dimension:     ${c.dimension}`,
    `metric:        ${c.metric}`,
    `multi-tenant:  ${c.multi_tenant ? 'yes' : 'no'}`,
    `description:   ${c.description || '-'}`,
    `vectors:       ${c.vector_count}`,
    `hnsw:          M ${c.hnsw.m}, ef_construction ${c.hnsw.ef_construction}, ef ${c.hnsw.ef}`,
    `created:       ${isoTime(c.created_at)}`,
  ];
  if (c.index) {
    const i = c.index;
    lines.push(
      `index:         ${i.indexed} indexed, ${i.pending} pending, ${i.tombstones} tombstones${i.compacting ? ', compacting' : ''}` +
        (c.multi_tenant ? `, ${i.tenants} tenants` : ''),
    );
  }
  return lines.join('\n') + '\n';
}

export function registerVectorCommands(program: Command): Command {
  const vectors = program.command('vectors').description('the vector store');
  const collections = vectors.command('collections').description('vector collections: create, list, get, delete');

  collections
    .command('create')
    .description('create a collection (its name and dimension cannot change later)')
    .requiredOption('--name <name>', 'letters, digits, "_", "." and "-", starting with a letter or digit; at most 128')
    .requiredOption('--dimension <n>', 'numbers per vector', positiveInteger('--dimension', 65536))
    .addOption(new Option('--metric <metric>', 'distance').choices(['cosine', 'l2', 'dot']).default('cosine'))
    .option('--multi-tenant', 'every operation names a tenant, and tenants never see each other\'s vectors')
    .option('--description <text>', 'a description')
    .option('--m <n>', 'HNSW links per node (default: the host\'s)', positiveInteger('--m', 100))
    .option('--ef-construction <n>', 'HNSW candidate list while building (default: the host\'s)', positiveInteger('--ef-construction', 10000))
    .option('--ef <n>', 'HNSW candidate list while searching (default: the host\'s)', positiveInteger('--ef', 10000))
    .option('--json', 'print JSON')
    .action(
      async (opts: {
        name: string;
        dimension: number;
        metric: string;
        multiTenant?: boolean;
        description?: string;
        m?: number;
        efConstruction?: number;
        ef?: number;
        json?: boolean;
      }) => {
        const hnsw = {
          ...(opts.m !== undefined ? { m: opts.m } : {}),
          ...(opts.efConstruction !== undefined ? { ef_construction: opts.efConstruction } : {}),
          ...(opts.ef !== undefined ? { ef: opts.ef } : {}),
        };
        const created = await clientFromEnv().request<CollectionJson>('POST', '/api/v1/vectors/collections', {
          body: {
            name: opts.name,
            dimension: opts.dimension,
            metric: opts.metric,
            multi_tenant: opts.multiTenant ?? false,
            ...(opts.description !== undefined ? { description: opts.description } : {}),
            ...(Object.keys(hnsw).length > 0 ? { hnsw } : {}),
          },
        });
        if (opts.json) process.stdout.write(JSON.stringify(created, null, 2) + '\n');
        else process.stdout.write(`${created.name}\n`);
      },
    );

  collections
    .command('list')
    .description('list collections with their vector counts')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const { collections: list } = await clientFromEnv().request<{ collections: CollectionJson[] }>('GET', '/api/v1/vectors/collections');
      if (opts.json) {
        process.stdout.write(JSON.stringify(list, null, 2) + '\n');
        return;
      }
      const rows = list.map((c) => [c.name, String(c.dimension), c.metric, c.multi_tenant ? 'yes' : 'no', String(c.vector_count), isoTime(c.created_at), c.description]);
      process.stdout.write(formatTable(['NAME', 'DIMENSION', 'METRIC', 'TENANTS', 'VECTORS', 'CREATED', 'DESCRIPTION'], rows));
    });

  collections
    .command('get')
    .description('show one collection, with its vector count and index state')
    .argument('<name>')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      const c = await clientFromEnv().request<CollectionJson>('GET', path(name));
      process.stdout.write(opts.json ? JSON.stringify(c, null, 2) + '\n' : describe(c));
    });

  collections
    .command('delete')
    .description('delete a collection with all its vectors and index files')
    .argument('<name>')
    .action(async (name: string) => {
      await clientFromEnv().request('DELETE', path(name));
      process.stdout.write(`deleted ${name}\n`);
    });

  return vectors;
}
