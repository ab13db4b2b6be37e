// The index worker's entry point: one per host process, serving every collection. It owns the
// vector tables' writes (its own SQLite connection to the same file) and every hnswlib graph, and
// answers the main thread's requests (worker-client.ts) in the order they arrive.
import { parentPort, workerData } from 'node:worker_threads';
import { VectorEngine } from './engine.js';
import { bulkPriority } from './thread-priority.js';
import type { WorkerOps, WorkerSettings } from './types.js';
import { serve } from './worker-protocol.js';

const settings = workerData as WorkerSettings;
let engine!: VectorEngine;
const handlers: { [K in keyof WorkerOps]: (arg: WorkerOps[K][0]) => WorkerOps[K][1] | Promise<WorkerOps[K][1]> } = {
  createCollection: (arg) => engine.createCollection(arg),
  dropCollection: (arg) => engine.dropCollection(arg.collectionId),
  upsert: (arg) => engine.upsert(arg),
  delete: (arg) => engine.delete(arg.collectionId, arg.keys),
  search: (arg) => engine.search(arg),
  sample: (arg) => engine.sample(arg),
  stats: (arg) => engine.stats(arg.collectionId),
  flush: (arg) => engine.flush(arg.checkpoint),
  close: () => engine.close(),
};

let loadError: Error | undefined;
const log = serve(parentPort!, (op, arg) => {
  if (loadError) throw loadError;
  const handler = handlers[op as keyof WorkerOps] as ((arg: unknown) => unknown) | undefined;
  if (!handler) throw new Error(`unknown operation ${op}`);
  return handler(arg);
});

try {
  engine = new VectorEngine(settings, (level, msg, data) => log({ level, msg, ...(data ? { data } : {}) }), bulkPriority(settings.nice));
  engine.load();
} catch (err) {
  loadError = err as Error;
  log({ level: 'error', msg: `the vector store could not load its indexes: ${loadError.message}` });
}
