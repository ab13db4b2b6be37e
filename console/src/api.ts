// The console's only way to the host: the public REST API, as the CLI uses it. The API key is
// exchanged for an access token at the public endpoint; the token lives in sessionStorage (gone
// when the tab closes) and goes as a bearer token on every call. Any 401 ends the session: the
// app shows the sign-in page with a message.

const TOKEN_KEY = 'platform.console.token';

export const SESSION_EXPIRED = 'Your session expired, sign in again.';

interface StoredToken {
  accessToken: string;
  /** Unix seconds. */
  expiredAt: number;
}

/** The host's error body: {"error": {code, message, param, type}}. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

type Listener = (message: string) => void;
let onSessionEnd: Listener = () => undefined;

/** The app's handler for a session that ends (401 or an expired token). */
export function whenSessionEnds(listener: Listener): void {
  onSessionEnd = listener;
}

function readToken(): StoredToken | null {
  try {
    const raw = sessionStorage.getItem(TOKEN_KEY);
    if (!raw) return null;
    const t = JSON.parse(raw) as StoredToken;
    return typeof t.accessToken === 'string' && typeof t.expiredAt === 'number' ? t : null;
  } catch {
    return null;
  }
}

/** Whether a token is held; an expired one is dropped. */
export function sessionState(): 'signed-in' | 'signed-out' | 'expired' {
  const t = readToken();
  if (!t) return 'signed-out';
  if (t.expiredAt * 1000 <= Date.now()) {
    sessionStorage.removeItem(TOKEN_KEY);
    return 'expired';
  }
  return 'signed-in';
}

export function endSession(message: string): void {
  sessionStorage.removeItem(TOKEN_KEY);
  onSessionEnd(message);
}

async function errorOf(res: Response): Promise<ApiError> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  const e = (body as { error?: { code?: unknown; message?: unknown; param?: unknown } } | undefined)?.error;
  if (e && typeof e.message === 'string') {
    return new ApiError(res.status, typeof e.code === 'string' ? e.code : 'error', e.message, typeof e.param === 'string' ? e.param : null);
  }
  return new ApiError(res.status, 'error', `the host answered ${res.status} ${res.statusText}`.trim(), null);
}

/** POST /api/v1/authentication/platform-api-key: the key for a token, kept in sessionStorage. */
export async function signIn(platformApiKey: string): Promise<void> {
  let res: Response;
  try {
    res = await fetch('/api/v1/authentication/platform-api-key', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ platformApiKey }),
    });
  } catch {
    throw new ApiError(0, 'network', 'the host cannot be reached; is it running?', null);
  }
  if (!res.ok) throw await errorOf(res);
  const body = (await res.json()) as StoredToken;
  sessionStorage.setItem(TOKEN_KEY, JSON.stringify({ accessToken: body.accessToken, expiredAt: body.expiredAt }));
}

export interface RequestOptions {
  /** A JSON body. */
  json?: unknown;
  /** Raw bytes (an ONNX upload), sent as application/octet-stream. */
  bytes?: Blob;
  signal?: AbortSignal;
}

/** A call with the token; a refusal throws the host's own message as an ApiError. */
export async function api<T>(method: string, url: string, options: RequestOptions = {}): Promise<T> {
  const res = await apiResponse(method, url, options);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

/** A path segment, escaped. */
export const seg = (s: string) => encodeURIComponent(s);

/**
 * A call with the token whose answer the caller reads itself (a Server-Sent Events stream, or
 * Prometheus text): refusals and a 401 are handled as api() handles them.
 */
export async function apiResponse(method: string, url: string, options: RequestOptions = {}): Promise<Response> {
  const token = readToken();
  if (!token) {
    endSession(SESSION_EXPIRED);
    throw new ApiError(401, 'unauthenticated', SESSION_EXPIRED, null);
  }
  const headers: Record<string, string> = { authorization: `Bearer ${token.accessToken}` };
  let body: BodyInit | undefined;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.bytes !== undefined) {
    headers['content-type'] = 'application/octet-stream';
    body = options.bytes;
  }
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body, ...(options.signal ? { signal: options.signal } : {}) });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'the host cannot be reached; is it running?', null);
  }
  if (res.status === 401) {
    const err = await errorOf(res);
    endSession(SESSION_EXPIRED);
    throw err;
  }
  if (!res.ok) throw await errorOf(res);
  return res;
}
