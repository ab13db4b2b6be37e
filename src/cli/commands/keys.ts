// platform keys create | list | revoke: local administration on DATA_DIR, no running host needed.
// The host reads the same database, so a new key works at once and a revoked one stops at once.
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { ApiKeyStore } from '../../auth/api-keys.js';
import { DATABASE_FILE, openDatabase, type Db } from '../../store/database.js';
import { CliError, usageError } from '../errors.js';
import { formatTable, isoTime } from '../table.js';

const dataDir = () => path.resolve(process.env.DATA_DIR?.trim() || './data');

/** Whether DATA_DIR holds a store yet: a typo in DATA_DIR must not pass unnoticed. */
const storeExists = (dir: string) => fs.existsSync(path.join(dir, DATABASE_FILE));

function withStore<T>(dir: string, fn: (keys: ApiKeyStore) => T): T {
  let db: Db;
  try {
    db = openDatabase(dir);
  } catch (err) {
    throw new CliError(`cannot open the database in DATA_DIR (${dir}): ${(err as Error).message}`);
  }
  try {
    return fn(new ApiKeyStore(db));
  } finally {
    db.close();
  }
}

export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description('manage API keys (works on DATA_DIR directly)');

  keys
    .command('create')
    .description('create an API key and print it, once, alone on stdout')
    .option('--name <name>', 'a label for the key', 'default')
    .action((opts: { name: string }) => {
      if (opts.name.length === 0 || opts.name.length > 128) throw usageError('--name must have 1 to 128 characters');
      const dir = dataDir();
      // On stderr: stdout carries the key alone.
      if (!storeExists(dir)) process.stderr.write(`no store in DATA_DIR (${dir}) yet: creating a new one there\n`);
      const created = withStore(dir, (store) => store.create(opts.name));
      process.stdout.write(`${created.key}\n`);
      process.stderr.write(`created API key ${created.id} (${created.name}); it is not shown again\n`);
    });

  keys
    .command('list')
    .description('list API keys (ids and names, never secrets)')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const dir = dataDir();
      // Listing creates nothing: an empty list from a mistyped DATA_DIR says so.
      if (!storeExists(dir)) process.stderr.write(`no store in DATA_DIR (${dir}) yet, so no keys\n`);
      const list = storeExists(dir) ? withStore(dir, (store) => store.list()) : [];
      if (opts.json) {
        process.stdout.write(JSON.stringify(list, null, 2) + '\n');
        return;
      }
      const rows = list.map((k) => [k.id, k.name, isoTime(k.createdAt), isoTime(k.lastUsedAt), k.revokedAt === null ? 'active' : `revoked ${isoTime(k.revokedAt)}`]);
      process.stdout.write(formatTable(['ID', 'NAME', 'CREATED', 'LAST USED', 'STATUS'], rows));
    });

  keys
    .command('revoke')
    .description('revoke an API key; tokens issued for it stop working at once')
    .argument('<key-id>', 'the id shown by "platform keys list"')
    .action((id: string) => {
      const dir = dataDir();
      if (!storeExists(dir)) throw new CliError(`no API key with id "${id}": there is no store in DATA_DIR (${dir}) yet`);
      const found = withStore(dir, (store) => store.revoke(id));
      if (!found) throw new CliError(`no API key with id "${id}"`);
      process.stdout.write(`revoked ${id}\n`);
    });
}
