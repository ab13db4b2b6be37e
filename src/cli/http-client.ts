// The CLI's HTTP client: PLATFORM_URL and PLATFORM_API_KEY, the key exchanged for an access token
// that is cached on disk (mode 0600) until five minutes before it expires, and every refusal
// turned into a CliError carrying the server's own message.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CliError, usageError } from './errors.js';

const REFRESH_MARGIN_SECONDS = 300;

interface CachedToken {
  accessToken: string;
  expiredAt: number;
}

export interface ClientOptions {
  baseUrl: string;
  apiKey: string | undefined;
  cacheDir: string;
  now?: () => number;
}

export interface RequestOptions {
  body?: unknown;
  /** A raw body (an ONNX upload) sent as application/octet-stream. */
  bytes?: Uint8Array;
  auth?: boolean;
}

export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PLATFORM_CACHE_DIR) return path.resolve(env.PLATFORM_CACHE_DIR);
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'platform');
}

export function clientFromEnv(env: NodeJS.ProcessEnv = process.env): PlatformClient {
  return new PlatformClient({
    baseUrl: env.PLATFORM_URL?.trim() || 'http://127.0.0.1:8080',
    apiKey: env.PLATFORM_API_KEY?.trim() || undefined,
    cacheDir: defaultCacheDir(env),
  });
}

export class PlatformClient {
  private readonly baseUrl: string;
  private readonly now: () => number;

  constructor(private readonly options: ClientOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw usageError(`PLATFORM_URL is not a URL: "${options.baseUrl}"`);
    }
    this.baseUrl = url.toString().replace(/\/+$/, '');
    this.now = options.now ?? Date.now;
  }

  /** The host's base address, as requests use it. */
  get url(): string {
    return this.baseUrl;
  }

  async request<T>(method: string, urlPath: string, options: RequestOptions = {}): Promise<T> {
    return this.parse<T>(await this.authorized(method, urlPath, options));
  }

  /** For an answer that is not JSON (a vector export): the response, whose body the caller reads. */
  async download(method: string, urlPath: string, options: RequestOptions = {}): Promise<Response> {
    const response = await this.authorized(method, urlPath, options);
    if (!response.ok) await this.parse(response); // throws the server's message
    return response;
  }

  private async authorized(method: string, urlPath: string, options: RequestOptions): Promise<Response> {
    const auth = options.auth ?? true;
    let token = auth ? await this.token(false) : undefined;
    let response = await this.send(method, urlPath, options, token);
    if (auth && response.status === 401) {
      // The cached token may belong to a rotated secret or a restarted host: exchange once more.
      token = await this.token(true);
      response = await this.send(method, urlPath, options, token);
    }
    return response;
  }

  private async send(method: string, urlPath: string, options: RequestOptions, token?: string): Promise<Response> {
    const headers: Record<string, string> = {};
    let body: string | Uint8Array | undefined;
    if (options.bytes !== undefined) {
      headers['content-type'] = 'application/octet-stream';
      body = options.bytes;
    } else if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    if (token) headers.authorization = `Bearer ${token}`;
    try {
      return await fetch(this.baseUrl + urlPath, { method, headers, body });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new CliError(`cannot reach the platform at ${this.baseUrl} (${why}); is the host running ("npm start")?`);
    }
  }

  private async parse<T>(response: Response): Promise<T> {
    const text = await response.text();
    let json: unknown;
    let notJson = false;
    try {
      json = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      notJson = true;
    }
    // Something else than the platform (a proxy's page, another server) must not be misread.
    const elsewhere = `; is PLATFORM_URL (${this.baseUrl}) the platform's address?`;
    if (response.ok) {
      if (notJson) throw new CliError(`${this.baseUrl} answered HTTP ${response.status} with a body that is not JSON${elsewhere}`);
      return json as T;
    }
    const message = (json as { error?: { message?: unknown } } | undefined)?.error?.message;
    if (typeof message === 'string') throw new CliError(`${message} (HTTP ${response.status})`);
    throw new CliError(`${this.baseUrl} answered HTTP ${response.status} without a platform error body${elsewhere}`);
  }

  private cacheFile(): string {
    const id = crypto.createHash('sha256').update(`${this.baseUrl}\0${this.options.apiKey}`).digest('hex').slice(0, 24);
    return path.join(this.options.cacheDir, `token-${id}.json`);
  }

  private async token(forceNew: boolean): Promise<string> {
    const apiKey = this.options.apiKey;
    if (!apiKey) throw usageError('PLATFORM_API_KEY is not set; create a key with "platform keys create" and export it');
    const file = this.cacheFile();
    if (!forceNew) {
      const cached = readCache(file);
      if (cached && cached.expiredAt - REFRESH_MARGIN_SECONDS > this.now() / 1000) return cached.accessToken;
    }
    const response = await this.send('POST', '/api/v1/authentication/platform-api-key', { body: { platformApiKey: apiKey } });
    const issued = await this.parse<CachedToken>(response);
    writeCache(file, issued);
    return issued.accessToken;
  }
}

function readCache(file: string): CachedToken | undefined {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<CachedToken>;
    if (typeof parsed.accessToken === 'string' && typeof parsed.expiredAt === 'number') {
      return { accessToken: parsed.accessToken, expiredAt: parsed.expiredAt };
    }
  } catch {
    // A missing or damaged cache only costs one exchange.
  }
  return undefined;
}

function writeCache(file: string, token: CachedToken): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(token), { mode: 0o600 });
    fs.renameSync(tmp, file);
  } catch {
    // An unwritable cache directory only means exchanging the key each time.
  }
}
