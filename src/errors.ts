// The one error shape of DESIGN.md section 3, raised anywhere and rendered by the server's
// error handler: {"error": {"code", "message", "param", "type"}}.

export type ErrorCode =
  | 'invalid_argument'
  | 'unauthenticated'
  | 'permission_denied'
  | 'not_found'
  | 'conflict'
  | 'request_timeout'
  | 'payload_too_large'
  | 'uri_too_long'
  | 'unsupported_media_type'
  | 'headers_too_large'
  | 'rate_limited'
  | 'overloaded'
  | 'unavailable'
  | 'internal';

const STATUS: Record<ErrorCode, number> = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  conflict: 409,
  request_timeout: 408,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  headers_too_large: 431,
  rate_limited: 429,
  overloaded: 429,
  unavailable: 503,
  internal: 500,
};

// The `type` field groups codes the way the OpenAI SDKs name their error classes.
const TYPE: Record<ErrorCode, string> = {
  invalid_argument: 'invalid_request_error',
  unauthenticated: 'authentication_error',
  permission_denied: 'permission_error',
  not_found: 'invalid_request_error',
  conflict: 'invalid_request_error',
  request_timeout: 'invalid_request_error',
  payload_too_large: 'invalid_request_error',
  uri_too_long: 'invalid_request_error',
  unsupported_media_type: 'invalid_request_error',
  headers_too_large: 'invalid_request_error',
  rate_limited: 'rate_limit_error',
  overloaded: 'rate_limit_error',
  unavailable: 'service_unavailable_error',
  internal: 'server_error',
};

export interface ErrorBody {
  error: { code: ErrorCode; message: string; param: string | null; type: string };
}

export class ApiError extends Error {
  readonly status: number;
  /** Extra response headers, such as Retry-After or WWW-Authenticate. */
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly param: string | null = null,
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = STATUS[code];
    this.headers = headers;
  }

  body(): ErrorBody {
    return { error: { code: this.code, message: this.message, param: this.param, type: TYPE[this.code] } };
  }
}

export const invalidArgument = (message: string, param: string | null = null) =>
  new ApiError('invalid_argument', message, param);
export const notFound = (message: string, param: string | null = null) => new ApiError('not_found', message, param);
export const conflict = (message: string, param: string | null = null) => new ApiError('conflict', message, param);
export const unavailable = (message: string) => new ApiError('unavailable', message);

/** JSON schema of the error body, used as every route's 4xx/5xx response schema. */
export const errorBodySchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'param', 'type'],
      properties: {
        code: { type: 'string' },
        message: { type: 'string' },
        param: { type: ['string', 'null'] },
        type: { type: 'string' },
      },
    },
  },
} as const;
