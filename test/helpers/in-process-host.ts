// The real app, listening on a free port with a temporary DATA_DIR, in the test's own process so
// that a test can inject the clock or capture the log. On SQLite by default; on PostgreSQL when
// the env has DATABASE_URL (and PLATFORM_TOKEN_SECRET: store-engines.ts hostEnv gives both).
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { loadAddon } from '../../src/native/addon.js';
import { buildApp, type App } from '../../src/server/app.js';
import type { Db } from '../../src/store/database.js';
import { openStore, type Store, type StoreDialect } from '../../src/store/store.js';
import { apiClient, type Api } from './api.js';
import { tempDir } from './paths.js';

export interface TestHost {
  app: App;
  store: Store;
  /** Which engine the store is on. */
  engine: StoreDialect;
  /**
   * The embedded SQLite file, for tests that look inside it (SQLite hosts only: on PostgreSQL
   * reading it throws; use `vectorDb`, or `store.db` for the database itself).
   */
  db: Db;
  /**
   * The SQLite file that holds the vector tables: the store's own file on SQLite; on PostgreSQL
   * this replica's cache of the shared vector store (src/vectors/cache-file.ts), through a
   * connection of the test's own.
   */
  vectorDb: Db;
  /** Where the vector store's index files are: DATA_DIR/vectors, or the cache's `vectors/` on PostgreSQL. */
  vectorDir: string;
  config: Config;
  url: string;
  logs: string[];
  /** Moves the injected clock forward. */
  advance(ms: number): void;
  close(): Promise<void>;
}

export async function startInProcessHost(env: Record<string, string> = {}): Promise<TestHost> {
  const dataDir = tempDir();
  const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', ...env });
  const store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const local = store.local;
  let offset = 0;
  const clock = () => Date.now() + offset;
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const addon = loadAddon();
  const app = await buildApp({
    config,
    store,
    clock,
    logStream,
    engineInfo: () => addon.engineInfo(),
  });
  // On PostgreSQL the replica's cache is DATA_DIR/vector-cache/<the database's identity>/.
  const cacheDir = local
    ? undefined
    : path.join(
        config.dataDir,
        'vector-cache',
        (await sql<{ token: string }>`SELECT token FROM vector_store_identity WHERE id = 1`.execute(store.db)).rows[0]!.token,
      );
  let cache: Db | undefined;
  return {
    app,
    store,
    engine: store.dialect,
    get db(): Db {
      if (!local) throw new Error('host.db is the SQLite store\'s file, and this host runs on PostgreSQL: use host.vectorDb (the vector cache) or host.store.db');
      return local;
    },
    get vectorDb(): Db {
      if (local) return local;
      if (!cache) {
        const file = path.join(cacheDir!, 'cache.db');
        if (!fs.existsSync(file)) throw new Error(`no vector cache at ${file}`);
        cache = new Database(file, { fileMustExist: true });
        cache.pragma('busy_timeout = 5000');
      }
      return cache;
    },
    vectorDir: path.join(cacheDir ?? config.dataDir, 'vectors'),
    config,
    logs,
    url: '',
    advance: (ms) => {
      offset += ms;
    },
    async close() {
      // A connection a test opened and left without a request (a generated one the client gave up
      // on) would keep close() waiting for the server's request timeout; after 2 s it is cut, as
      // SHUTDOWN_TIMEOUT_SECONDS cuts what is left of a real host's shutdown.
      const cut = setTimeout(() => app.server.server.closeAllConnections(), 2000);
      cut.unref();
      await app.server.close();
      clearTimeout(cut);
      cache?.close();
      await store.close();
    },
  };
}

/** Starts listening after the test has had its chance to add routes. */
export async function listen(host: TestHost): Promise<TestHost> {
  const address = await host.app.server.listen({ host: '127.0.0.1', port: 0 });
  host.url = address;
  return host;
}

export async function tokenFor(host: TestHost, name = 'test'): Promise<{ key: string; keyId: string; token: string }> {
  const created = await host.app.keys.create(name);
  const res = await fetch(`${host.url}/api/v1/authentication/platform-api-key`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platformApiKey: created.key }),
  });
  if (res.status !== 200) throw new Error(`token exchange failed: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { accessToken: string };
  return { key: created.key, keyId: created.id, token: body.accessToken };
}

export interface HostForTests {
  /** The host and its token: read them inside tests and hooks, once the beforeAll has run. */
  readonly host: TestHost;
  readonly token: string;
  /** A JSON client with the token. */
  api: Api;
  /** POSTs a JSON body, expects `status` (200 unless said otherwise) and answers the body. */
  post<T = any>(url: string, body: unknown, status?: number): Promise<T>;
}

/** A host's environment, or a function that gives it when the host starts (a fresh database, say). */
export type HostEnv = Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);

/**
 * The real app, listening, with a token, for the tests of a file or of a describe block: call it
 * there, and it starts the host in beforeAll and closes it in afterAll.
 */
export function hostForTests(env: HostEnv = {}): HostForTests {
  let host: TestHost | undefined;
  let token = '';
  let client: Api | undefined;
  beforeAll(async () => {
    host = await listen(await startInProcessHost(typeof env === 'function' ? await env() : env));
    token = (await tokenFor(host)).token;
    client = apiClient(host.url, token);
  });
  afterAll(async () => {
    await host?.close();
  });
  const started = () => {
    if (!host || !client) throw new Error('the test host is not started yet: use it inside tests and hooks');
    return { host, client };
  };
  const api: Api = (method, path, body, headers) => started().client(method, path, body, headers);
  return {
    get host() {
      return started().host;
    },
    get token() {
      started();
      return token;
    },
    api,
    async post<T = any>(url: string, body: unknown, status = 200): Promise<T> {
      const res = await api<T>('POST', url, body);
      expect(res.status, `${url} ${JSON.stringify(res.body)}`).toBe(status);
      return res.body;
    },
  };
}
