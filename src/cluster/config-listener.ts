// The replica's LISTEN connection on PostgreSQL: one client outside the pool, listening on the
// channel the configuration triggers notify (migration 9), that reconnects with a jittered
// backoff whenever it is lost. Each notification carries only the new version. After every
// (re)connect the caller reads the configuration again, since notifications sent while the
// connection was down are gone: a lost connection can delay a change, never lose it.
import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';

export const CONFIG_CHANNEL = 'platform_config';

export interface ConfigListenerOptions {
  url: string;
  /** Shown in pg_stat_activity, so that an operator (or a test) can find this replica's listener. */
  applicationName: string;
  /** A notification: the version just committed. */
  onVersion: (version: number) => void;
  /** Connected and listening, the first time and after every reconnect. */
  onListening: () => void;
  log: FastifyBaseLogger;
}

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5000;

export class ConfigListener {
  private client: pg.Client | undefined;
  private stopped = false;
  private retryMs = FIRST_RETRY_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  /** How many times the connection was made; the first is not a reconnect. */
  connections = 0;

  constructor(private readonly options: ConfigListenerOptions) {}

  start(): void {
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.options.url, application_name: this.options.applicationName, keepAlive: true });
    let lost = false;
    const onLost = (err?: Error) => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = undefined;
      client.end().catch(() => undefined);
      if (this.stopped) return;
      this.options.log.warn({ err: err?.message }, 'configuration listener lost its connection; reconnecting');
      this.scheduleRetry();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (message) => {
      const version = Number(message.payload);
      if (Number.isSafeInteger(version)) this.options.onVersion(version);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CONFIG_CHANNEL}`);
    } catch (err) {
      onLost(err as Error);
      return;
    }
    if (lost || this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.retryMs = FIRST_RETRY_MS;
    this.connections++;
    if (this.connections > 1) this.options.log.info('configuration listener reconnected');
    this.options.onListening();
  }

  private scheduleRetry(): void {
    if (this.retryTimer) return;
    const wait = this.retryMs * (0.5 + Math.random());
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, wait);
    this.retryTimer.unref();
  }
}
