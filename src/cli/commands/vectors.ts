// platform vectors collections create | list | get | delete: vector collections through the
// host's API (DESIGN.md section 2); platform vectors count | export | import: a collection's
// vectors counted, written out to a file, and read back in as a new collection.
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { Command, InvalidArgumentError, Option } from 'commander';
import { CliError } from '../errors.js';
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

/** A --filter option: the JSON of the API's filter ({"eq": {...}}, {"range": ...}, ...); the host checks the rest. */
function jsonObject(flag: string) {
  return (value: string): Record<string, unknown> => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch (err) {
      throw new InvalidArgumentError(`${flag} is not JSON (${(err as Error).message})`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError(`${flag} must be a JSON object, such as '{"eq": {"color": "red"}}'`);
    return parsed as Record<string, unknown>;
  };
}

/** A transfer that stopped before the end of the file (the host went away, or ended an idle export). */
function brokeOff(name: string, err: unknown): string {
  const e = err as Error & { cause?: { message?: string } };
  const cause = e.cause?.message ? ` (${e.cause.message})` : '';
  return `the export of "${name}" broke off: ${e.message}${cause}`;
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
  // On PostgreSQL: the copy of the replica that answered (each replica holds every collection).
  if (c.replica) {
    const r = c.replica;
    const state = r.state === 'ready' ? 'ready' : 'catching up (not ready for this collection yet)';
    lines.push(`this replica:  ${state}, at change ${r.applied_seq} of ${r.last_seq}`);
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

  vectors
    .command('count')
    .description('count the vectors of a collection (and tenant), optionally those matching a filter')
    .argument('<collection>')
    .option('--tenant <id>', 'the tenant (required on a multi-tenant collection)')
    .option('--filter <json>', 'a filter on properties, as in a search: \'{"eq": {"color": "red"}}\'', jsonObject('--filter'))
    .action(async (collection: string, opts: { tenant?: string; filter?: Record<string, unknown> }) => {
      const { count } = await clientFromEnv().request<{ count: number }>('POST', '/api/v1/vectors/count', {
        body: { collection_name: collection, ...(opts.tenant !== undefined ? { tenant_id: opts.tenant } : {}), ...(opts.filter ? { filter: opts.filter } : {}) },
      });
      process.stdout.write(`${count}\n`);
    });

  vectors
    .command('export')
    .description('write a collection (its definition and every vector, exactly) as an NDJSON file, to stdout or --output')
    .argument('<name>')
    .option('--output <file>', 'write to this file instead of stdout')
    .action(async (name: string, opts: { output?: string }) => {
      const response = await clientFromEnv().download('GET', `/api/v1/vectors/export/${encodeURIComponent(name)}`);
      const body = Readable.fromWeb(response.body as ReadableStream<Uint8Array>);
      if (opts.output === undefined) {
        try {
          await pipeline(body, process.stdout, { end: false });
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          throw new CliError(code && code !== 'ABORT_ERR' ? `cannot write to stdout: ${code}` : brokeOff(name, err));
        }
        return;
      }
      // Written beside the target and renamed when complete: a broken transfer leaves no partial file.
      const tmp = `${opts.output}.${process.pid}.partial`;
      try {
        await pipeline(body, fs.createWriteStream(tmp, { mode: 0o600 }));
        fs.renameSync(tmp, opts.output);
      } catch (err) {
        fs.rmSync(tmp, { force: true });
        const code = (err as NodeJS.ErrnoException).code;
        throw new CliError(code ? `cannot write ${opts.output}: ${code}` : brokeOff(name, err));
      }
      process.stderr.write(`${opts.output}: ${response.headers.get('x-vector-count') ?? '?'} vectors\n`);
    });

  vectors
    .command('import')
    .description('create a collection from a file written by "platform vectors export" ("-" reads stdin)')
    .argument('<file>')
    .option('--name <name>', 'the new collection\'s name (default: the name in the file)')
    .option('--json', 'print JSON')
    .action(async (file: string, opts: { name?: string; json?: boolean }) => {
      let bytes: Buffer;
      try {
        bytes = fs.readFileSync(file === '-' ? 0 : file);
      } catch (err) {
        throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      const query = opts.name !== undefined ? `?${new URLSearchParams({ name: opts.name })}` : '';
      const created = await clientFromEnv().request<CollectionJson>('POST', `/api/v1/vectors/import${query}`, { bytes });
      if (opts.json) process.stdout.write(JSON.stringify(created, null, 2) + '\n');
      else process.stdout.write(`${created.name}\n`);
      process.stderr.write(`${created.vector_count} vectors\n`);
    });

  return vectors;
}
