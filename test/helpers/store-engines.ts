// The two engines of the store in one test file: a real PostgreSQL for the whole file (started
// before its tests, stopped after), and a fresh place to open a store on either engine.
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

export function useStoreEngines(prefix: string): StoreEngines {
  let server: TestPostgres | undefined;
  let databases = 0;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });
  return {
    async freshLocation(engine) {
      const dataDir = tempDir(`platform-${prefix}-`);
      if (engine === 'sqlite') return { dataDir };
      return { dataDir, databaseUrl: await server!.createDatabase(`${prefix}_${process.pid}_${++databases}`) };
    },
    postgres: () => server!,
  };
}
