// The message protocol between the main thread and a vector-store worker. Requests and answers
// travel in batches: everything the main thread asks within one turn of its event loop is one
// message, and every answer a worker has ready when it finishes a message (or a turn) is one
// message back. Under concurrency this saves most of the wake-ups and copies that one message
// per search would cost; a lone request waits for nothing.
//
// A batch fails only the requests it cannot carry. Each batch is announced first by a small note
// of its ids (`{ sending: [...] }`, always readable): if the batch itself then cannot be read at
// the other end (a `messageerror`, such as a value too deep for the receiver's stack), the
// receiver fails exactly those ids instead of waiting for them forever. A batch that cannot even
// be written (a value that does not clone) is posted again one by one, and only the requests or
// replies that still fail are failed, each on its own.
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

/** The note that announces a batch: the ids it carries. */
export type Sending = { sending: number[] };

/** What a worker posts: a batch of replies (after its note), or a log line for the host's logger. */
export type WorkerMessage = { replies: Reply[] } | { log: LogLine } | Sending;

/** What the main thread posts: a batch of requests, after its note. */
export type HostMessage = Request[] | Sending;

/** Buffers transferable from a result (Float32Arrays' memory moves instead of being copied). */
export type Transfers = (result: unknown) => ArrayBuffer[];

/** One request or reply waiting to be posted, with the buffers that move with it. */
export interface Outgoing<T extends { id: number }> {
  item: T;
  transfer: ArrayBuffer[];
}

/** Where batches are posted: a worker's parent port, or a Worker. */
export interface Poster {
  postMessage(message: unknown, transfer?: readonly ArrayBuffer[]): void;
}

/**
 * Posts `items` as one message (`wrap` makes it), announced by their ids. If it cannot be written,
 * each is posted alone; `unposted` gets each one that still cannot be (its buffers did not move).
 */
export function postBatch<T extends { id: number }>(port: Poster, items: Outgoing<T>[], wrap: (items: T[]) => unknown, unposted: (item: T, err: unknown) => void): void {
  if (items.length === 0) return;
  port.postMessage({ sending: items.map((o) => o.item.id) } satisfies Sending);
  try {
    port.postMessage(
      wrap(items.map((o) => o.item)),
      items.flatMap((o) => o.transfer),
    );
    return;
  } catch (err) {
    if (items.length === 1) {
      unposted(items[0]!.item, err);
      return;
    }
  }
  for (const o of items) postBatch(port, [o], wrap, unposted);
}

/**
 * The receiving side's record of the last note: the ids whose batch has not arrived yet. A
 * `messageerror` in its place (the batch could not be read) fails exactly those.
 */
export class Announced {
  private ids: number[] = [];

  /** A note arrived: its batch comes next. */
  note(msg: Sending): void {
    this.ids = msg.sending;
  }

  /** The batch arrived. */
  arrived(): void {
    this.ids = [];
  }

  /** The batch could not be read: the ids it carried. */
  lost(): number[] {
    const ids = this.ids;
    this.ids = [];
    return ids;
  }
}

/**
 * The deepest nesting a reply may have. A receiver reads a message recursively, on its own stack:
 * about 2,000 levels overflow the main thread's, and the whole batch is lost (a `messageerror`).
 * Nothing a request may send comes near it (JSON bodies nest at most MAX_JSON_DEPTH, 64, levels).
 */
export const MAX_MESSAGE_DEPTH = 256;

/** Whether `value` nests objects and arrays more than `max` levels deep (typed arrays are leaves). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v) || v instanceof ArrayBuffer) continue;
    if (depth >= max) return true;
    const children = Array.isArray(v) ? v : Object.values(v);
    for (const c of children) if (typeof c === 'object' && c !== null) stack.push([c, depth + 1]);
  }
  return false;
}

const isSending = (msg: unknown): msg is Sending => typeof msg === 'object' && msg !== null && 'sending' in msg;

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

function toError(err: unknown): WorkerError {
  if (err instanceof VectorStoreError || err instanceof ApiError) {
    return { code: err.code as WorkerError['code'], message: err.message, param: err.param };
  }
  return { code: 'internal', message: (err as Error)?.stack ?? String(err), param: null };
}

/**
 * Serves requests on a worker's port with `handle`, which answers at once or with a promise.
 * Replies are collected and posted together at the end of each incoming batch, and again at the
 * end of any turn in which promises settled. A reply that cannot be posted is replaced by an
 * internal error for its request alone; a batch of requests that cannot be read is answered with
 * an internal error for each of its requests.
 */
export function serve(port: MessagePort, handle: (op: string, arg: unknown) => unknown, transfers: Transfers = () => []): (line: LogLine) => void {
  let outbox: Outgoing<Reply>[] = [];
  let scheduled = false;
  const announced = new Announced();
  const later = () => {
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  const failed = (id: number, message: string) => {
    outbox.push({ item: { id, ok: false, error: { code: 'internal', message, param: null } }, transfer: [] });
    later();
  };
  const flush = () => {
    scheduled = false;
    const replies = outbox;
    outbox = [];
    postBatch(port, replies, (items) => ({ replies: items }) satisfies WorkerMessage, (reply, err) => {
      // Its error in its place: a few strings, which always clone (an error reply is never retried).
      if (reply.ok) failed(reply.id, `the answer could not be sent back from the worker: ${errorText(err)}`);
    });
  };
  const answer = (reply: Reply, isLater: boolean) => {
    // Too deep to be read at the other end: its error instead, so that the batch still arrives.
    if (reply.ok && nestedDeeperThan(reply.result, MAX_MESSAGE_DEPTH)) {
      reply = { id: reply.id, ok: false, error: { code: 'internal', message: `the answer nests more than ${MAX_MESSAGE_DEPTH} levels deep and cannot be sent back from the worker`, param: null } };
    }
    outbox.push({ item: reply, transfer: reply.ok ? transfers(reply.result) : [] });
    if (isLater) later();
  };
  port.on('message', (batch: HostMessage) => {
    if (isSending(batch)) {
      announced.note(batch);
      return;
    }
    announced.arrived();
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
  port.on('messageerror', (err: Error) => {
    for (const id of announced.lost()) failed(id, `the request could not be read by the worker: ${errorText(err)}`);
  });
  return (line) => port.postMessage({ log: line } satisfies WorkerMessage);
}

/** How the main thread reads a worker's messages: replies to `settle`, lost batches to `lose`. */
export function replyReader(handlers: {
  log: (line: LogLine) => void;
  settle: (reply: Reply) => void;
  lose: (ids: number[], err: Error) => void;
}): { message: (msg: WorkerMessage) => void; messageerror: (err: Error) => void } {
  const announced = new Announced();
  return {
    message: (msg) => {
      if ('log' in msg) handlers.log(msg.log);
      else if (isSending(msg)) announced.note(msg);
      else {
        announced.arrived();
        for (const reply of msg.replies) handlers.settle(reply);
      }
    },
    messageerror: (err) => handlers.lose(announced.lost(), err),
  };
}
