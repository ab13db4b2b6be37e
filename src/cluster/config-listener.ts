// A replica's LISTEN connection on PostgreSQL: one client outside the pool, listening on one
// channel, that reconnects with a jittered backoff whenever it is lost. The configuration
// triggers notify CONFIG_CHANNEL with the new version (migration 9); vector writes notify their
// own channel with the collection (src/vectors/shared-log.ts). After every (re)connect the caller
// reads again, since notifications sent while the connection was down are gone: a lost connection
// can delay a change, never lose it.
import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';

export const CONFIG_CHANNEL = 'platform_config';

export interface ConfigListenerOptions {
  url: string;
  /** Shown in pg_stat_activity, so that an operator (or a test) can find this replica's listener. */
  applicationName: string;
  /** The channel; CONFIG_CHANNEL when not given. */
  channel?: string;
  /** A notification's payload. */
  onNotification: (payload: string) => void;
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
      this.options.log.warn({ err: err?.message, channel: this.options.channel ?? CONFIG_CHANNEL }, 'notification listener lost its connection; reconnecting');
      this.scheduleRetry();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (message) => this.options.onNotification(message.payload ?? ''));
    try {
      await client.connect();
      await client.query(`LISTEN ${this.options.channel ?? CONFIG_CHANNEL}`);
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
    if (this.connections > 1) this.options.log.info({ channel: this.options.channel ?? CONFIG_CHANNEL }, 'notification listener reconnected');
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
