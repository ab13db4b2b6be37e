// The main thread's side of the grammar worker (grammar-worker.ts): one worker, started on the
// first job, building grammars in arrival order off the event loop. A job the worker has not
// answered within HARD_LIMIT_MS (its own schema budget is JOB_BUDGET_MS) ends the worker; the
// job fails and the next one starts a fresh worker.
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../../worker-threads.js';
import type { GrammarJob, GrammarJobFailure } from './grammar-job.js';
import type { JobReply } from './grammar-worker.js';

const HARD_LIMIT_MS = 10_000;

/** A job whose grammar cannot be built (the schema's fault): the route's 400. */
export class GrammarRefused extends Error {
  constructor(readonly failure: GrammarJobFailure) {
    super(failure.message);
    this.name = 'GrammarRefused';
  }
}

interface Pending {
  resolve: (encoded: Int32Array) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class GrammarCompiler {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  /** The encoded grammar of `job`; rejects with GrammarRefused, or an Error when the worker failed. */
  compile(job: GrammarJob): Promise<Int32Array> {
    const worker = this.live();
    const id = this.nextId++;
    return new Promise<Int32Array>((resolve, reject) => {
      const timer = setTimeout(() => this.restart(new GrammarRefused({ message: `building its grammar took more than ${HARD_LIMIT_MS / 1000} s` })), HARD_LIMIT_MS);
      this.pending.set(id, { resolve, reject, timer });
      worker.postMessage({ id, job });
    });
  }

  /** Ends the worker (the host is closing). */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    this.failAll(new Error('the grammar worker is closing'));
    await w?.terminate();
  }

  private live(): Worker {
    if (this.worker) return this.worker;
    const worker = spawnWorker(import.meta.url, 'grammar-worker');
    worker.unref(); // never what keeps the process alive
    worker.on('message', (reply: JobReply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      clearTimeout(p.timer);
      if ('encoded' in reply) p.resolve(reply.encoded);
      else if ('refused' in reply) p.reject(new GrammarRefused(reply.refused));
      else p.reject(new Error(`the grammar worker failed: ${reply.crashed}`));
    });
    worker.on('error', (err) => this.restart(err));
    worker.on('exit', () => {
      if (this.worker === worker) this.restart(new Error('the grammar worker exited'));
    });
    this.worker = worker;
    return worker;
  }

  /** Fails every job in flight and drops the worker; the next job starts another. */
  private restart(reason: Error): void {
    const w = this.worker;
    this.worker = null;
    this.failAll(reason);
    void w?.terminate();
  }

  private failAll(reason: Error): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(reason);
    }
    this.pending.clear();
  }
}

/** The host's one grammar compiler. */
export const grammarCompiler = new GrammarCompiler();
