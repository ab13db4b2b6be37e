// A real PostgreSQL for a test file (started before its tests, stopped after), and the two engines
// of the store in one test file: a fresh place to open a store on either engine.
import { afterAll, beforeAll } from 'vitest';
import type { StoreDialect } from '../../src/store/store.js';
import { tempDir } from './paths.js';
import { startPostgres, type TestPostgres } from './postgres.js';

/** Both engines, for `describe.each(STORE_ENGINES)`: the embedded SQLite file, and PostgreSQL. */
export const STORE_ENGINES: readonly StoreDialect[] = ['sqlite', 'postgres'];

/** The token secret of a test host on PostgreSQL (DATABASE_URL needs one). */
export const TEST_TOKEN_SECRET = 'a-test-token-secret-of-at-least-32-bytes-0123456789';

export interface StoreEngines {
  /** A fresh store's location on `engine`: open it as many times as a test needs connections. */
  freshLocation(engine: StoreDialect): Promise<{ dataDir: string; databaseUrl?: string }>;
  /**
   * The environment of a host (startInProcessHost, hostForTests, vectorTestHost) on `engine`,
   * with `env` added: on SQLite `env` itself; on PostgreSQL a fresh database (DATABASE_URL) and
   * the token secret it needs too.
   */
  hostEnv(engine: StoreDialect, env?: Record<string, string>): Promise<Record<string, string>>;
  /** The server, once the file's tests run. */
  postgres(): TestPostgres;
}

/**
 * A real PostgreSQL for the enclosing test file or describe block: started before its tests and
 * stopped after. The returned function gives the server once the tests run.
 */
export function usePostgres(): () => TestPostgres {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (!server) throw new Error('the test PostgreSQL is not started: use it from a test or a hook');
    return server;
  };
}

export function useStoreEngines(prefix: string): StoreEngines {
  const server = usePostgres();
  let databases = 0;
  const freshDatabase = () => server().createDatabase(`${prefix}_${process.pid}_${++databases}`);
  return {
    async freshLocation(engine) {
      const dataDir = tempDir(`platform-${prefix}-`);
      if (engine === 'sqlite') return { dataDir };
      return { dataDir, databaseUrl: await freshDatabase() };
    },
    async hostEnv(engine, env = {}) {
      if (engine === 'sqlite') return { ...env };
      return { DATABASE_URL: await freshDatabase(), PLATFORM_TOKEN_SECRET: TEST_TOKEN_SECRET, ...env };
    },
    postgres: server,
  };
}
