// The message protocol between the main thread and a vector-store worker. Requests and answers
// travel in batches: everything the main thread asks within one turn of its event loop is one
// message, and every answer a worker has ready when it finishes a message (or a turn) is one
// message back. Under concurrency this saves most of the wake-ups and copies that one message
// per search would cost; a lone request waits for nothing.
import type { MessagePort } from 'node:worker_threads';
import { ApiError } from '../errors.js';
import { VectorStoreError, type WorkerError } from './types.js';

export interface Request {
  id: number;
  op: string;
  arg: unknown;
}

export type Reply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: WorkerError };

export type LogLine = { level: 'info' | 'warn' | 'error'; msg: string; data?: Record<string, unknown> };

/** What a worker posts: a batch of replies, or a log line for the host's logger. */
export type WorkerMessage = { replies: Reply[] } | { log: LogLine };

/** Buffers transferable from a result (Float32Arrays' memory moves instead of being copied). */
export type Transfers = (result: unknown) => ArrayBuffer[];

function toError(err: unknown): WorkerError {
  if (err instanceof VectorStoreError || err instanceof ApiError) {
    return { code: err.code as WorkerError['code'], message: err.message, param: err.param };
  }
  return { code: 'internal', message: (err as Error)?.stack ?? String(err), param: null };
}

/**
 * Serves requests on a worker's port with `handle`, which answers at once or with a promise.
 * Replies are collected and posted together at the end of each incoming batch, and again at the
 * end of any turn in which promises settled.
 */
export function serve(port: MessagePort, handle: (op: string, arg: unknown) => unknown, transfers: Transfers = () => []): (line: LogLine) => void {
  let outbox: Reply[] = [];
  let moved: ArrayBuffer[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (outbox.length === 0) return;
    const replies = outbox;
    const buffers = moved;
    outbox = [];
    moved = [];
    port.postMessage({ replies } satisfies WorkerMessage, buffers);
  };
  const answer = (reply: Reply, later: boolean) => {
    outbox.push(reply);
    if (reply.ok) moved.push(...transfers(reply.result));
    if (later && !scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  port.on('message', (batch: Request[]) => {
    for (const req of batch) {
      try {
        const result = handle(req.op, req.arg);
        if (result instanceof Promise) {
          result.then(
            (value) => answer({ id: req.id, ok: true, result: value }, true),
            (err) => answer({ id: req.id, ok: false, error: toError(err) }, true),
          );
        } else answer({ id: req.id, ok: true, result }, false);
      } catch (err) {
        answer({ id: req.id, ok: false, error: toError(err) }, false);
      }
    }
    flush();
  });
  return (line) => port.postMessage({ log: line } satisfies WorkerMessage);
}
