// Turns every failure into the error shape of DESIGN.md section 3: our ApiErrors, Fastify's own
// (malformed JSON, wrong content type, oversized body, validation) and anything unexpected,
// which becomes a bare 500 whose details go only to the log, under the request id.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorCode } from '../errors.js';
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
