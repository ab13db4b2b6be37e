// Server-Sent Events for the streamed completions of src/server/routes/chat.ts: the writer, and
// the loop that drains a source of events (a generation's chunks) into it. The reply is hijacked,
// so Fastify's serializers and error handler no longer apply: events are written as JSON by hand,
// and a failure after the status line is reported as one more event in the error shape, followed
// by the end of the stream.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';

/** Writes an SSE stream by hand: Fastify's serializers do not apply to a hijacked reply. */
export class EventStream {
  private closed = false;

  constructor(
    private readonly reply: FastifyReply,
    requestId: string,
    onDisconnect: () => void,
  ) {
    reply.hijack();
    reply.raw.writeHead(200, {
      // What hooks set before (x-replica-id): a hijacked reply sends only what is written here.
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-request-id': requestId,
      // Proxies such as nginx must not buffer the stream.
      'x-accel-buffering': 'no',
    });
    reply.raw.on('close', () => {
      if (!this.closed) {
        this.closed = true;
        onDisconnect();
      }
    });
  }

  get open(): boolean {
    return !this.closed;
  }

  send(data: unknown): void {
    if (!this.closed) this.reply.raw.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }

  end(): void {
    if (this.closed) return;
    this.send('[DONE]');
    this.closed = true;
    this.reply.raw.end();
  }
}

/**
 * Answers `request` with the events of `source`, then `[DONE]`. A client that disconnects makes
 * the stream call `onDisconnect` at once and stops reading `source` (its generator is returned).
 */
export async function streamEvents(request: FastifyRequest, reply: FastifyReply, source: AsyncIterable<unknown>, onDisconnect: () => void): Promise<FastifyReply> {
  const stream = new EventStream(reply, request.id, onDisconnect);
  try {
    for await (const event of source) {
      if (!stream.open) break;
      stream.send(event);
    }
  } catch (err) {
    // The status line is gone: report the failure in the stream, in the error shape.
    const apiError = err instanceof ApiError ? err : new ApiError('internal', `generation failed; the server log has the details under request id ${request.id}`);
    if (!(err instanceof ApiError)) request.log.error({ err }, 'generation failed');
    stream.send(apiError.body());
  } finally {
    stream.end();
  }
  return reply;
}
