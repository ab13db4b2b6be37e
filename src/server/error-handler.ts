// Turns every failure into the error shape of DESIGN.md section 3: our ApiErrors, Fastify's own
// (malformed JSON, wrong content type, oversized body, validation) and anything unexpected,
// which becomes a bare 500 whose details go only to the log, under the request id. Failures
// before routing (a bad URL, a path parameter too long: `frameworkErrors`) and those of the HTTP
// parser itself (headers too large, bytes that are no request: `clientErrorHandler`) are
// answered in the same shape.
import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { ApiError, type ErrorCode } from '../errors.js';
import { REPLICA_HEADER } from './forward.js';
import { describeValidationError } from '../validation.js';

function fromFastify(err: FastifyError, request: FastifyRequest, bodyLimit: number): ApiError | undefined {
  if (err.validation && err.validation.length > 0) {
    const { message, param } = describeValidationError(err.validation[0]!, err.validationContext ?? 'body');
    return new ApiError('invalid_argument', message, param);
  }
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_argument', `request body is not valid JSON: ${err.message.replace(/^Body is not valid JSON but content-type is set to 'application\/json'$/, 'syntax error')}`);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_argument', 'request body is empty; send a JSON object');
    case 'FST_ERR_BAD_URL':
      return new ApiError('invalid_argument', 'the URL is not valid: a percent-encoded sequence in it is malformed or not UTF-8');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError('uri_too_long', `a path segment of the URL is longer than the limit of ${MAX_PARAM_LENGTH} characters (percent-encoded)`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', `request body is larger than the limit of ${bodyLimit} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      if (err.statusCode === 415) {
        const type = request.headers['content-type'] ?? '(none)';
        return new ApiError('unsupported_media_type', `Content-Type "${type}" is not supported here; send application/json`);
      }
      return new ApiError('invalid_argument', 'Content-Length does not match the body');
  }
  // Body syntax errors from the JSON parser carry 400 and a SyntaxError message.
  if (err.statusCode === 400 && err instanceof SyntaxError) {
    return new ApiError('invalid_argument', `request body is not valid JSON: ${err.message}`);
  }
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const code: ErrorCode =
      status === 404 ? 'not_found' : status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : status === 429 ? 'rate_limited' : 'invalid_argument';
    return new ApiError(code, err.message);
  }
  return undefined;
}

export function installErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = err instanceof ApiError ? err : fromFastify(err, request, bodyLimit);
    if (apiError) {
      // 503 is a state the caller is told to wait out (loading, draining, overloaded), not a fault.
      if (apiError.status === 503) request.log.info({ code: apiError.code, reason: apiError.message }, 'request refused: unavailable');
      else if (apiError.status >= 500) request.log.error({ err }, 'request failed');
      return reply.code(apiError.status).headers(apiError.headers).send(apiError.body());
    }
    request.log.error({ err }, 'unhandled error');
    const internal = new ApiError('internal', `internal error; the server log has the details under request id ${request.id}`);
    return reply.code(500).send(internal.body());
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const err = new ApiError('not_found', `no route ${request.method} ${path}`);
    return reply.code(404).send(err.body());
  });
}

/**
 * The longest path parameter, as sent (percent-encoded): room for the longest vector id (256
 * UTF-16 code units, src/vectors/types.ts MAX_ID_LENGTH) at 12 characters each (an astral
 * character is 2 code units, 4 bytes of UTF-8, `%XX` each). Collection names (128) and every other
 * parameter are far shorter. Longer ones are a 414 before any route runs.
 */
export const MAX_PARAM_LENGTH = 256 * 12;

/**
 * Fastify's errors before routing: a URL with bad percent-encoding (`%zz`, `%c0%af`) and a path
 * parameter longer than MAX_PARAM_LENGTH, in our shape with our headers.
 */
export function frameworkErrors(replicaId: string, bodyLimit: number): NonNullable<FastifyServerOptions['frameworkErrors']> {
  return (err, request, reply) => {
    const apiError = fromFastify(err as FastifyError, request as FastifyRequest, bodyLimit) ?? new ApiError('internal', `internal error; the server log has the details under request id ${request.id}`);
    if (apiError.status >= 500) request.log.error({ err }, 'request failed before routing');
    void (reply as FastifyReply).code(apiError.status).headers({ ...apiError.headers, 'x-request-id': request.id, [REPLICA_HEADER]: replicaId }).send(apiError.body());
  };
}

/** The raw HTTP/1.1 answer of a request the parser refused: our error body, then the connection closes. */
function rawAnswer(error: ApiError): string {
  const body = JSON.stringify(error.body());
  return (
    `HTTP/1.1 ${error.status} ${http.STATUS_CODES[error.status] ?? ''}\r\n` +
    `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  );
}

const answered = new WeakSet<Socket>();

/**
 * Node's HTTP parser's refusals (FastifyServerOptions.clientErrorHandler): headers with the URL
 * larger than Node's limit (431), a request not read within the request timeout (408), and bytes
 * that are no HTTP request (400), such as the rest of a body longer than its Content-Length. A
 * response still being written on the connection (the request before those bytes) is finished
 * first; then the error goes out and the connection closes.
 */
export function clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return;
  answered.add(socket);
  const error =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError('headers_too_large', `the request's headers (with its URL) are larger than the limit of ${http.maxHeaderSize} bytes`)
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new ApiError('request_timeout', 'the request was not received in time')
        : new ApiError('invalid_argument', `the request is not valid HTTP/1.1 (${err.code ?? 'parse error'}); a body longer than its Content-Length is one cause`);
  // Not the error itself: its rawPacket holds the request's bytes, Authorization header and all.
  this.log.debug({ code: err.code, reason: err.message }, 'client error');
  const send = () => {
    if (socket.destroyed) return;
    if (socket.writable) socket.end(rawAnswer(error));
    // A client that does not read the answer is not waited for.
    setTimeout(() => socket.destroy(), 1000).unref();
  };
  const inFlight = (socket as Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage;
  if (inFlight && !inFlight.writableFinished) {
    let sent = false;
    const once = () => {
      if (!sent) {
        sent = true;
        // After the response's last bytes are handed to the socket.
        setImmediate(send);
      }
    };
    inFlight.once('finish', once);
    inFlight.once('close', once);
  } else send();
}

/** How long a socket whose writing side has ended still reads what the client sends (`lingerOnClose`). */
export const LINGER_MS = 2000;

/**
 * Installed on every connection (app.ts). Node closes the socket of a `Connection: close` request
 * once its response is written (`destroySoon`), whether or not the client's body was read: a body
 * the route did not wait for (a 401 or 413 before it, a GET's body), or bytes that are no request.
 * Closing a socket with bytes unread makes the kernel answer with a reset, which throws away the
 * part of the response the client has not read yet: answers cut short (found by
 * test/host-property.test.ts). Closed the lingering way instead (RFC 9112 section 9.6): the
 * writing side ends once the response is out, what still comes is read and dropped, and the socket
 * goes when the client closes its side, or LINGER_MS after the response was written.
 */
export function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function destroySoon(this: Socket) {
    if (this.writable) this.end();
    const later = () => setTimeout(() => this.destroy(), LINGER_MS).unref();
    if (this.writableFinished) later();
    else this.once('finish', later);
  };
}

/** Query parameters whose values are credentials, by name. */
const SECRET_PARAM = /token|key|secret|passw|auth|signature|credential|jwt|session/i;

/**
 * A URL for the log: the value of each query parameter named like a credential (`?token=`,
 * `api_key`, `platformApiKey`...), and anything shaped like a JWT or a platform API key, becomes
 * `[redacted]`. A token sent in the query string is refused, and never logged either.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query =
    q < 0
      ? ''
      : '?' +
        url
          .slice(q + 1)
          .split('&')
          .map((part) => {
            const eq = part.indexOf('=');
            if (eq < 0) return part;
            let name = part.slice(0, eq);
            try {
              name = decodeURIComponent(name.replace(/\+/g, ' '));
            } catch {
              // logged as sent
            }
            return SECRET_PARAM.test(name) ? `${part.slice(0, eq)}=[redacted]` : part;
          })
          .join('&');
  return (path + query).replace(/eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, '[redacted]').replace(/psk_[A-Za-z0-9_-]+/g, '[redacted]');
}

/** Fastify's request serializer, with the URL redacted. */
export function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: redactUrl(request.url),
    version: request.headers?.['accept-version'],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
