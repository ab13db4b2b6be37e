// The index worker's entry point: one per host process, serving every collection. It owns the
// vector tables' writes (its own SQLite connection to the same file) and every hnswlib graph, and
// answers the main thread's requests (worker-client.ts) in the order they arrive.
import { parentPort, workerData } from 'node:worker_threads';
import { VectorEngine } from './engine.js';
import { VectorStoreError, type WorkerOps, type WorkerRequest, type WorkerResponse, type WorkerSettings } from './types.js';

const port = parentPort!;
const post = (msg: WorkerResponse) => port.postMessage(msg);

const engine = new VectorEngine(workerData as WorkerSettings, (level, msg, data) => post({ log: { level, msg, ...(data ? { data } : {}) } }));
let loadError: Error | undefined;
try {
  engine.load();
} catch (err) {
  loadError = err as Error;
  post({ log: { level: 'error', msg: `the vector store could not load its indexes: ${loadError.message}` } });
}

type Handler<K extends keyof WorkerOps> = (arg: WorkerOps[K][0]) => WorkerOps[K][1] | Promise<WorkerOps[K][1]>;
const handlers: { [K in keyof WorkerOps]: Handler<K> } = {
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

port.on('message', (req: WorkerRequest) => {
  const reply = (result: unknown) => post({ id: req.id, ok: true, result });
  const fail = (err: unknown) => {
    if (err instanceof VectorStoreError) post({ id: req.id, ok: false, error: { code: err.code, message: err.message, param: err.param } });
    else post({ id: req.id, ok: false, error: { code: 'internal', message: (err as Error)?.stack ?? String(err), param: null } });
  };
  try {
    if (loadError) throw loadError;
    const result = (handlers[req.op] as Handler<typeof req.op>)(req.arg as never);
    if (result instanceof Promise) result.then(reply, fail);
    else reply(result);
  } catch (err) {
    fail(err);
  }
});
