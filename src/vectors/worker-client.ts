// The main thread's side of the index worker: starts it, sends requests and matches answers.
//
// From compiled dist/ the worker is plain index-worker.js. From TypeScript sources (vitest, tsx)
// there is no .js beside this file, so the worker starts from a two-line bootstrap that registers
// tsx's loader in the worker and then imports index-worker.ts.
//
// If the worker dies (a native crash in hnswlib, say), the requests in flight fail with a 500
// and the next request starts a fresh worker, which reloads every index from disk and SQLite.
import { Worker } from 'node:worker_threads';
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../errors.js';
import type { WorkerOp, WorkerOps, WorkerResponse, WorkerSettings } from './types.js';

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

function spawn(settings: WorkerSettings): Worker {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./index-worker.js', here), { workerData: settings });
  const entry = new URL('./index-worker.ts', here).href;
  let tsx = 'tsx/esm/api';
  try {
    tsx = import.meta.resolve(tsx);
  } catch {
    // resolved from the working directory instead
  }
  const bootstrap = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { eval: true, workerData: settings });
}

export class IndexWorker {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closing = false;

  constructor(
    private readonly settings: WorkerSettings,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Starts the worker now (it loads every index before answering anything). */
  start(): void {
    if (this.worker) return;
    const worker = spawn(this.settings);
    this.worker = worker;
    worker.on('message', (msg: WorkerResponse) => {
      if ('log' in msg) {
        const { level, msg: text, data } = msg.log;
        this.log[level]({ ...(data ?? {}) }, text);
        return;
      }
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.ok) p.resolve(msg.result);
      else if (msg.error.code === 'internal') {
        this.log.error({ detail: msg.error.message }, 'the vector index worker failed a request');
        p.reject(new Error('the vector index worker failed a request'));
      } else p.reject(new ApiError(msg.error.code, msg.error.message, msg.error.param));
    });
    worker.on('error', (err) => {
      this.log.error({ err }, 'the vector index worker crashed');
    });
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      if (!this.closing) this.log.error({ code }, 'the vector index worker exited; it restarts on the next request');
      const err = new Error(`the vector index worker exited (code ${code})`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    });
  }

  call<K extends WorkerOp>(op: K, arg: WorkerOps[K][0], transfer: ArrayBuffer[] = []): Promise<WorkerOps[K][1]> {
    if (this.closing) return Promise.reject(new ApiError('unavailable', 'the vector store is shutting down'));
    this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker!.postMessage({ id, op, arg }, transfer);
    });
  }

  /** Applies and checkpoints all queued index work, then stops the worker. */
  async close(): Promise<void> {
    if (!this.worker || this.closing) return;
    const result = this.call('close', {});
    this.closing = true;
    try {
      await result;
    } catch (err) {
      this.log.error({ err }, 'the vector index worker did not close cleanly');
    }
    await this.worker?.terminate();
  }
}
