// The main thread's side of a worker thread (the index worker, the ingest worker): starts it,
// sends requests and matches answers.
//
// The worker starts from dist/ or from the TypeScript sources alike (src/worker-threads.ts).
//
// If a worker dies (a native crash in hnswlib, say), the requests in flight fail with a 500 and
// the next request starts a fresh one (the index worker reloads every index from disk and SQLite).
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../worker-threads.js';
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../errors.js';
import { postBatch, replyReader, type Outgoing, type Request } from './worker-protocol.js';

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/** Operation name -> [argument, result]. */
export type OpMap = { [op: string]: [unknown, unknown] };

export class WorkerClient<Ops extends OpMap> {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closing = false;
  private outbox: Outgoing<Request>[] = [];
  private flushScheduled = false;

  constructor(
    /** The entry file beside this one, without extension: index-worker, ingest-worker. */
    private readonly name: string,
    private readonly workerData: unknown,
    private readonly log: FastifyBaseLogger,
    /** Runs after each (re)start, before any other request: sends the state a fresh worker needs. */
    private readonly onStart?: (client: WorkerClient<Ops>) => void,
  ) {}

  /** Whether the worker is up (it starts on the first call, and again after a crash). */
  get running(): boolean {
    return this.worker !== undefined && !this.closing;
  }

  /** Starts the worker now (it loads every index before answering anything). */
  start(): void {
    if (this.worker) return;
    const worker = spawnWorker(import.meta.url, this.name, this.workerData);
    this.worker = worker;
    const reader = replyReader({
      log: ({ level, msg: text, data }) => this.log[level]({ ...(data ?? {}) }, text),
      settle: (reply) => {
        const p = this.pending.get(reply.id);
        if (!p) return;
        this.pending.delete(reply.id);
        if (reply.ok) p.resolve(reply.result);
        else if (reply.error.code === 'internal') {
          this.log.error({ detail: reply.error.message }, `the vector ${this.name} failed a request`);
          p.reject(new Error(`the vector ${this.name} failed a request`));
        } else p.reject(new ApiError(reply.error.code, reply.error.message, reply.error.param));
      },
      // A batch of answers that could not be read here: its requests fail, the others go on.
      lose: (ids, err) => {
        this.log.error({ err, requests: ids.length }, `answers of the vector ${this.name} could not be read`);
        for (const id of ids) this.fail(id, new Error(`the answer of the vector ${this.name} could not be read: ${err.message}`));
      },
    });
    worker.on('message', reader.message);
    worker.on('messageerror', reader.messageerror);
    worker.on('error', (err) => {
      this.log.error({ err }, `the vector ${this.name} crashed`);
    });
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      if (!this.closing) this.log.error({ code }, `the vector ${this.name} exited; it restarts on the next request`);
      const err = new Error(`the vector ${this.name} exited (code ${code})`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.outbox = [];
    });
    this.onStart?.(this);
  }

  call<K extends keyof Ops & string>(op: K, arg: Ops[K][0], transfer: ArrayBuffer[] = []): Promise<Ops[K][1]> {
    if (this.closing) return Promise.reject(new ApiError('unavailable', 'the vector store is shutting down'));
    this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.outbox.push({ item: { id, op, arg }, transfer });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        // After this turn's I/O callbacks: requests that arrived together travel together.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.outbox.length === 0 || !this.worker) return;
    const batch = this.outbox;
    this.outbox = [];
    // A request that cannot be posted (its argument does not clone) fails alone.
    postBatch(this.worker, batch, (items) => items, (req, err) =>
      this.fail(req.id, new Error(`the request could not be sent to the vector ${this.name}: ${err instanceof Error ? err.message : String(err)}`)),
    );
  }

  private fail(id: number, err: Error): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    p.reject(err);
  }

  /** Sends `op` (if given) as the last request, waits for its answer, then stops the worker. */
  async close(op?: keyof Ops & string, arg?: unknown): Promise<void> {
    if (!this.worker || this.closing) return;
    const result = op === undefined ? Promise.resolve() : this.call(op, arg as never);
    this.closing = true;
    try {
      await result;
    } catch (err) {
      this.log.error({ err }, `the vector ${this.name} did not close cleanly`);
    }
    await this.worker?.terminate();
  }
}
