// The set-up of the vector store's integration tests: the real app in the test's own process
// (hostForTests, with LOG_LEVEL=warn), a scroll followed to its end, an import streamed without a
// length, seeded random vectors, and the index worker's VectorIndex on its own (unit tests).
import path from 'node:path';
import { VectorIndex } from '../../src/vectors/vector-index.js';
import type { LogFn, WorkerSettings } from '../../src/vectors/types.js';
import { hostForTests, type HostEnv, type HostForTests } from './in-process-host.js';
import { rng } from './random.js';

export interface ScrollPage<V = { id: string; values?: number[]; properties: Record<string, unknown> }> {
  vectors: V[];
  next_cursor: string | null;
}

export interface VectorTestHost extends HostForTests {
  /** Every page of a scroll from `body`, following next_cursor until it is null (or `maxPages` pages). */
  scrollPages<V = ScrollPage['vectors'][number]>(body: Record<string, unknown>, maxPages?: number): Promise<Array<ScrollPage<V>>>;
  /** POSTs an import as ?name=`name` without a length (chunked): `head`, then at least `padding` spaces, 1 MiB at a time. */
  importChunked(name: string, head: string, padding: number): Promise<Response>;
}

/**
 * Call at the top of a test file (or of a describe block): `env` adds to (or overrides)
 * LOG_LEVEL=warn. A function for `env` is called when the host starts: for a host on either
 * engine, `() => engines.hostEnv(engine, {...})` (store-engines.ts).
 */
export function vectorTestHost(env: HostEnv = {}): VectorTestHost {
  const base = hostForTests(async () => ({ LOG_LEVEL: 'warn', ...(typeof env === 'function' ? await env() : env) }));
  return Object.assign(base, {
    async scrollPages<V>(body: Record<string, unknown>, maxPages = Infinity) {
      const pages: Array<ScrollPage<V>> = [];
      let cursor: string | null = null;
      do {
        const page: ScrollPage<V> = await base.post('/api/v1/vectors/scroll', { ...body, ...(cursor ? { cursor } : {}) });
        pages.push(page);
        cursor = page.next_cursor;
      } while (cursor !== null && pages.length < maxPages);
      return pages;
    },
    importChunked(name: string, head: string, padding: number) {
      const piece = new Uint8Array(1024 * 1024).fill(0x20);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          if (head) controller.enqueue(new TextEncoder().encode(head));
        },
        pull(controller) {
          if (sent >= padding) controller.close();
          else {
            sent += piece.byteLength;
            controller.enqueue(piece);
          }
        },
      });
      return fetch(`${base.host.url}/api/v1/vectors/import?name=${name}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${base.token}`, 'content-type': 'application/x-ndjson' },
        body,
        duplex: 'half',
      } as RequestInit);
    },
  });
}

/** `n` vectors of `dim` values uniform in [-1, 1), the same for the same seed. */
export function randomVectors(n: number, dim: number, seed: number): number[][] {
  const r = rng(seed);
  return Array.from({ length: n }, () => Array.from({ length: dim }, () => r() * 2 - 1));
}

/**
 * A VectorIndex on `dataDir`'s store (migrated beforehand), loaded, logging into `logs`: no
 * checkpoints or compactions unless `overrides` asks for them.
 */
export function loadedVectorIndex(dataDir: string, logs: string[], overrides: Partial<WorkerSettings> = {}): VectorIndex {
  const log: LogFn = (level, msg) => logs.push(`${level}: ${msg}`);
  const index = new VectorIndex(
    {
      dbPath: path.join(dataDir, 'platform.db'),
      indexDir: path.join(dataDir, 'vectors'),
      checkpointChanges: 1_000_000,
      checkpointIdleMs: 0,
      compactMinTombstones: 1_000_000,
      exactScanMax: 100,
      maxBacklogFloats: 1 << 24,
      nice: 0,
      ...overrides,
    },
    log,
  );
  index.load();
  return index;
}
