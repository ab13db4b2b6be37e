// platform keys create | list | revoke: local administration on the store, no running host needed:
// the SQLite file in DATA_DIR, or the PostgreSQL database at DATABASE_URL when that is set. The
// host reads the same database, so a new key works at once and a revoked one stops within a
// second (the host holds revocations in memory: src/auth/key-revocations.ts).
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { ApiKeyStore } from '../../auth/api-keys.js';
import { checkRole, checkScope, DEFAULT_ROLE, describeScope, ROLES, ScopeError, type KeyGrant } from '../../auth/roles.js';
import { ConfigError, dataDirFrom, databaseUrlFrom } from '../../config.js';
import { DATABASE_FILE } from '../../store/database.js';
import { openStore, redactedUrl, type Store } from '../../store/store.js';
import { CliError, usageError } from '../errors.js';
import { formatTable, isoTime } from '../table.js';

const dataDir = () => dataDirFrom(process.env);

/** DATABASE_URL when set: the keys are then in PostgreSQL, and DATA_DIR plays no part. */
function databaseUrl(): string | undefined {
  try {
    return databaseUrlFrom(process.env);
  } catch (err) {
    if (err instanceof ConfigError) throw usageError(err.message);
    throw err;
  }
}

/** Whether DATA_DIR holds a store yet: a typo in DATA_DIR must not pass unnoticed. */
const storeExists = (dir: string) => fs.existsSync(path.join(dir, DATABASE_FILE));

async function withStore<T>(dir: string, url: string | undefined, fn: (keys: ApiKeyStore) => Promise<T>): Promise<T> {
  let store: Store;
  try {
    store = await openStore({ dataDir: dir, databaseUrl: url });
  } catch (err) {
    // Never the URL itself: it may carry a password.
    const where = url === undefined ? `in DATA_DIR (${dir})` : `at DATABASE_URL (${redactedUrl(url)})`;
    throw new CliError(`cannot open the database ${where}: ${(err as Error).message}`);
  }
  try {
    return await fn(new ApiKeyStore(store.db));
  } finally {
    await store.close();
  }
}

/** `a,b` -> ['a', 'b']; an empty name is a usage error naming the flag. */
function nameList(value: string | undefined, flag: string): string[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((n) => n.trim());
  if (names.some((n) => n === '')) throw usageError(`${flag} has an empty name; give comma-separated names, such as ${flag} a,b`);
  return names;
}

/** The role and scope of the flags, checked as the host checks them (src/auth/roles.ts). */
function grantFrom(opts: { role: string; project?: string; collections?: string; tenants?: string }): KeyGrant {
  try {
    return {
      role: checkRole(opts.role),
      scope: checkScope({ project: opts.project, collections: nameList(opts.collections, '--collections'), tenants: nameList(opts.tenants, '--tenants') }),
    };
  } catch (err) {
    if (err instanceof ScopeError) throw usageError(`--${err.message}`);
    throw err;
  }
}

export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description('manage API keys (works on the store directly: DATA_DIR, or DATABASE_URL when set)');

  keys
    .command('create')
    .description('create an API key and print it, once, alone on stdout')
    .option('--name <name>', 'a label for the key', 'default')
    .option('--role <role>', `what the key may do: ${ROLES.join(', ')} (see the README, "Roles and scopes")`, DEFAULT_ROLE)
    .option('--project <project>', 'only the models of this project (library models are in project "library")')
    .option('--collections <names>', 'only these vector collections, comma-separated')
    .option('--tenants <ids>', 'only these tenants of multi-tenant collections, comma-separated')
    .action(async (opts: { name: string; role: string; project?: string; collections?: string; tenants?: string }) => {
      if (opts.name.length === 0 || opts.name.length > 128) throw usageError('--name must have 1 to 128 characters');
      const grant = grantFrom(opts);
      const dir = dataDir();
      const url = databaseUrl();
      // On stderr: stdout carries the key alone. On PostgreSQL the migrations make the tables.
      if (url === undefined && !storeExists(dir)) process.stderr.write(`no store in DATA_DIR (${dir}) yet: creating a new one there\n`);
      const created = await withStore(dir, url, (store) => store.create(opts.name, grant));
      process.stdout.write(`${created.key}\n`);
      const scope = describeScope(created.scope);
      process.stderr.write(`created API key ${created.id} (${created.name}, role ${created.role}${scope === '-' ? '' : `, ${scope}`}); it is not shown again\n`);
    });

  keys
    .command('list')
    .description('list API keys (ids, names, roles and scopes, never secrets)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const dir = dataDir();
      const url = databaseUrl();
      // Listing creates nothing in DATA_DIR: an empty list from a mistyped DATA_DIR says so.
      const local = url === undefined;
      if (local && !storeExists(dir)) process.stderr.write(`no store in DATA_DIR (${dir}) yet, so no keys\n`);
      const list = !local || storeExists(dir) ? await withStore(dir, url, (store) => store.list()) : [];
      if (opts.json) {
        process.stdout.write(JSON.stringify(list, null, 2) + '\n');
        return;
      }
      const rows = list.map((k) => [
        k.id,
        k.name,
        k.role,
        describeScope(k.scope),
        isoTime(k.createdAt),
        isoTime(k.lastUsedAt),
        k.revokedAt === null ? 'active' : `revoked ${isoTime(k.revokedAt)}`,
      ]);
      process.stdout.write(formatTable(['ID', 'NAME', 'ROLE', 'SCOPE', 'CREATED', 'LAST USED', 'STATUS'], rows));
    });

  keys
    .command('revoke')
    .description('revoke an API key; tokens issued for it stop working at once')
    .argument('<key-id>', 'the id shown by "platform keys list"')
    .action(async (id: string) => {
      const dir = dataDir();
      const url = databaseUrl();
      if (url === undefined && !storeExists(dir)) throw new CliError(`no API key with id "${id}": there is no store in DATA_DIR (${dir}) yet`);
      const found = await withStore(dir, url, (store) => store.revoke(id));
      if (!found) throw new CliError(`no API key with id "${id}"`);
      process.stdout.write(`revoked ${id}\n`);
    });
}
