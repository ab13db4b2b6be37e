// A real PostgreSQL for a test file (started before its tests, stopped after), and the two engines
// of the store in one test file: a fresh place to open a store on either engine.
import { afterAll, beforeAll } from 'vitest';
import type { StoreDialect } from '../../src/store/store.js';
import { tempDir } from './paths.js';
import { startPostgres, type TestPostgres } from './postgres.js';

export interface StoreEngines {
  /** A fresh store's location on `engine`: open it as many times as a test needs connections. */
  freshLocation(engine: StoreDialect): Promise<{ dataDir: string; databaseUrl?: string }>;
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
  return {
    async freshLocation(engine) {
      const dataDir = tempDir(`platform-${prefix}-`);
      if (engine === 'sqlite') return { dataDir };
      return { dataDir, databaseUrl: await server().createDatabase(`${prefix}_${process.pid}_${++databases}`) };
    },
    postgres: server,
  };
}
