// The index worker's entry point: one per host process, serving every collection. It owns the
// vector tables' writes (its own SQLite connection to the same file) and every hnswlib graph, and
// answers the main thread's requests (worker-client.ts) in the order they arrive.
import { parentPort, workerData } from 'node:worker_threads';
import { VectorIndex } from './vector-index.js';
import { bulkPriority } from './thread-priority.js';
import type { WorkerOps, WorkerSettings } from './types.js';
import { serve } from './worker-protocol.js';

const settings = workerData as WorkerSettings;
let vectorIndex!: VectorIndex;
const handlers: { [K in keyof WorkerOps]: (arg: WorkerOps[K][0]) => WorkerOps[K][1] | Promise<WorkerOps[K][1]> } = {
  createCollection: (arg) => vectorIndex.createCollection(arg),
  dropCollection: (arg) => vectorIndex.dropCollection(arg.collectionId),
  upsert: (arg) => vectorIndex.upsert(arg),
  delete: (arg) => vectorIndex.delete(arg.collectionId, arg.keys),
  deleteWhere: (arg) => vectorIndex.deleteWhere(arg.collectionId, arg.tenant, arg.filter),
  count: (arg) => vectorIndex.count(arg),
  scroll: (arg) => vectorIndex.scroll(arg),
  importCollection: (arg) => vectorIndex.importCollection(arg),
  gauges: () => vectorIndex.gauges(),
  cachedCollections: () => vectorIndex.cachedCollections(),
  adoptCollection: (arg) => vectorIndex.adoptCollection(arg),
  applyLog: (arg) => vectorIndex.applyLog(arg),
  room: () => vectorIndex.room(),
  idsWhere: (arg) => vectorIndex.idsWhere(arg.collectionId, arg.tenant, arg.filter),
  search: (arg) => vectorIndex.search(arg),
  sample: (arg) => vectorIndex.sample(arg),
  stats: (arg) => vectorIndex.stats(arg.collectionId),
  flush: (arg) => vectorIndex.flush(arg.checkpoint),
  close: () => vectorIndex.close(),
};

let loadError: Error | undefined;
const log = serve(parentPort!, (op, arg) => {
  if (loadError) throw loadError;
  const handler = handlers[op as keyof WorkerOps] as ((arg: unknown) => unknown) | undefined;
  if (!handler) throw new Error(`unknown operation ${op}`);
  return handler(arg);
});

try {
  vectorIndex = new VectorIndex(settings, (level, msg, data) => log({ level, msg, ...(data ? { data } : {}) }), bulkPriority(settings.nice));
  vectorIndex.load();
} catch (err) {
  loadError = err as Error;
  log({ level: 'error', msg: `the vector store could not load its indexes: ${loadError.message}` });
}
