// A real PostgreSQL for tests: Debian's server binaries (`.ci/run` installs the `postgresql`
// package when they are missing), a fresh cluster in a temporary directory, listening on a free
// loopback port only, with trust authentication for the one local user. As root, the cluster
// is created and run as the `postgres` system user, since PostgreSQL refuses to run as root.
// Durability settings are off: a test cluster never outlives its test.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.js';

export interface TestPostgres {
  /** postgres://platform@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** Creates an empty database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

const USER = 'platform';

/** The directory of Debian's newest installed PostgreSQL server binaries. */
export function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin/postgres'))) : [];
  if (versions.length === 0) {
    throw new Error('PostgreSQL server binaries not found in /usr/lib/postgresql: install the "postgresql" package (.ci/run does)');
  }
  versions.sort((a, b) => Number(b) - Number(a));
  return path.join(root, versions[0]!, 'bin');
}

const asRoot = process.getuid?.() === 0;

/**
 * As root, the postgres system user's ids, to spawn the server binaries as that user directly:
 * through `runuser` a SIGINT (fast shutdown) would not reach the server.
 */
function serverUser(): { uid: number; gid: number } | undefined {
  if (!asRoot) return undefined;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  const gid = id('-g');
  if (!Number.isInteger(uid) || !Number.isInteger(gid) || uid <= 0) throw new Error('no "postgres" system user to run PostgreSQL as (install the postgresql package)');
  return { uid, gid };
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'platform-pg-'));
  const data = path.join(dir, 'data');
  if (asRoot) {
    fs.chmodSync(dir, 0o755);
    spawnSync('chown', ['postgres', dir]);
  }
  const user = serverUser();
  const init = spawnSync(path.join(bin, 'initdb'), ['-D', data, '-U', USER, '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], {
    encoding: 'utf8',
    cwd: dir,
    ...user,
  });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);

  // PostgreSQL cannot listen on port 0 and report the port, so a free one is picked; another
  // process may take it first, and then the start is tried again on another.
  let started: { server: ChildProcess; port: number; exited: Promise<void> } | undefined;
  let lastError: Error | undefined;
  for (let attempt = 0; attempt < 3 && !started; attempt++) {
    try {
      started = await runServer(bin, data, dir, await freePort(), user);
    } catch (err) {
      lastError = err as Error;
    }
  }
  if (!started) throw lastError!;
  const { server, port, exited } = started;
  const url = `postgres://${USER}@127.0.0.1:${port}/postgres`;

  return {
    url,
    port,
    async createDatabase(name: string): Promise<string> {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://${USER}@127.0.0.1:${port}/${name}`;
    },
    async stop(): Promise<void> {
      if (server.exitCode === null) {
        // SIGINT: "fast" shutdown, which disconnects clients instead of waiting for them.
        server.kill('SIGINT');
        const timer = setTimeout(() => server.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Starts `postgres` on `port` and waits until it accepts a connection. */
async function runServer(
  bin: string,
  data: string,
  socketDir: string,
  port: number,
  user: { uid: number; gid: number } | undefined,
): Promise<{ server: ChildProcess; port: number; exited: Promise<void> }> {
  const settings = ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200'];
  const server = spawn(path.join(bin, 'postgres'), ['-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', socketDir, ...settings], {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: socketDir,
    ...user,
  });
  let log = '';
  server.stderr!.on('data', (chunk: Buffer) => {
    log += chunk;
    // TEST_POSTGRES_LOG=<file>: the server's log, for a failure that needs its side (a deadlock).
    if (process.env.TEST_POSTGRES_LOG) fs.appendFileSync(process.env.TEST_POSTGRES_LOG, chunk);
  });
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const url = `postgres://${USER}@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return { server, port, exited };
    } catch (err) {
      await client.end().catch(() => {});
      if (server.exitCode !== null || Date.now() > deadline) {
        server.kill('SIGKILL');
        await exited;
        throw new Error(`PostgreSQL did not start on port ${port}: ${(err as Error).message}\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
