// The request log: every predict request's variation, audience, latency and status, and the
// bodies of shadow pairs, in a bounded store under DATA_DIR. It is its own SQLite file, written
// in batches without fsync (a log may lose its last fraction of a second in a power cut; the
// store of record may not), and trimmed to `maxRows` so that it rotates instead of growing.
import path from 'node:path';
import Database from 'better-sqlite3';
import { privateSqliteFile } from '../store/private-files.js';

export interface RequestLogEntry {
  ts: number;
  requestId: string;
  modelId: string;
  variation: string;
  audienceId: string | null;
  shadow: boolean;
  status: number;
  latencyMs: number;
  error: string | null;
  /** Kept for shadow pairs only. */
  request: string | null;
  response: string | null;
}

export interface LogQuery {
  modelId: string;
  variation?: string;
  shadow?: boolean;
  limit: number;
  /** Only entries older than this id (paging backwards). */
  before?: number;
}

export interface VariationWindow {
  variation: string;
  /** Shadow copies are counted apart from the variation's routed requests. */
  shadow: boolean;
  requests: number;
  errors: number;
  latenciesMs: number[];
}

const MAX_BODY_CHARS = 64 * 1024;

/** A body for the log, cut to a bounded size. */
export function logBody(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? 'null';
  return text.length > MAX_BODY_CHARS ? `${text.slice(0, MAX_BODY_CHARS)}...[truncated ${text.length - MAX_BODY_CHARS} chars]` : text;
}

export class RequestLog {
  private readonly db: Database.Database;
  private buffer: RequestLogEntry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly insert: Database.Statement;
  private readonly trim: Database.Statement;

  constructor(
    dataDir: string,
    private readonly maxRows: number,
    private readonly flushMs = 200,
  ) {
    privateSqliteFile(path.join(dataDir, 'request-log.db'));
    this.db = new Database(path.join(dataDir, 'request-log.db'));
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = OFF');
    this.db.exec(`CREATE TABLE IF NOT EXISTS request_log (
      id          INTEGER PRIMARY KEY,
      ts          INTEGER NOT NULL,
      request_id  TEXT NOT NULL,
      model_id    TEXT NOT NULL,
      variation   TEXT NOT NULL,
      audience_id TEXT,
      shadow      INTEGER NOT NULL,
      status      INTEGER NOT NULL,
      latency_ms  REAL NOT NULL,
      error       TEXT,
      request     TEXT,
      response    TEXT
    ) STRICT;
    CREATE INDEX IF NOT EXISTS request_log_by_model ON request_log (model_id, ts);`);
    this.insert = this.db.prepare(
      `INSERT INTO request_log (ts, request_id, model_id, variation, audience_id, shadow, status, latency_ms, error, request, response)
       VALUES (@ts, @requestId, @modelId, @variation, @audienceId, @shadow, @status, @latencyMs, @error, @request, @response)`,
    );
    this.trim = this.db.prepare('DELETE FROM request_log WHERE id <= ?');
  }

  add(entry: RequestLogEntry): void {
    this.buffer.push(entry);
    if (this.buffer.length >= 512) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.flushMs);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer.length === 0) return;
    const entries = this.buffer;
    this.buffer = [];
    this.db.transaction(() => {
      let last = 0;
      for (const e of entries) last = Number(this.insert.run({ ...e, shadow: e.shadow ? 1 : 0 }).lastInsertRowid);
      this.trim.run(last - this.maxRows);
    })();
  }

  query(q: LogQuery): Array<RequestLogEntry & { id: number }> {
    this.flush();
    const where = ['model_id = @modelId'];
    if (q.variation !== undefined) where.push('variation = @variation');
    if (q.shadow !== undefined) where.push('shadow = @shadow');
    if (q.before !== undefined) where.push('id < @before');
    const rows = this.db
      .prepare(`SELECT * FROM request_log WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT @limit`)
      .all({ modelId: q.modelId, variation: q.variation, shadow: q.shadow === undefined ? undefined : q.shadow ? 1 : 0, before: q.before, limit: q.limit }) as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      id: r.id as number,
      ts: r.ts as number,
      requestId: r.request_id as string,
      modelId: r.model_id as string,
      variation: r.variation as string,
      audienceId: r.audience_id as string | null,
      shadow: r.shadow === 1,
      status: r.status as number,
      latencyMs: r.latency_ms as number,
      error: r.error as string | null,
      request: r.request as string | null,
      response: r.response as string | null,
    }));
  }

  /** Requests per variation since `since` (unix ms): routed ones first, then shadow copies. */
  window(modelId: string, since: number): VariationWindow[] {
    this.flush();
    const rows = this.db
      .prepare('SELECT variation, shadow, status, latency_ms FROM request_log WHERE model_id = ? AND ts >= ? ORDER BY shadow, id')
      .all(modelId, since) as Array<{ variation: string; shadow: number; status: number; latency_ms: number }>;
    const byVariation = new Map<string, VariationWindow>();
    for (const r of rows) {
      const key = `${r.shadow}\0${r.variation}`;
      let w = byVariation.get(key);
      if (!w) byVariation.set(key, (w = { variation: r.variation, shadow: r.shadow === 1, requests: 0, errors: 0, latenciesMs: [] }));
      w.requests++;
      if (r.status >= 400) w.errors++;
      w.latenciesMs.push(r.latency_ms);
    }
    return [...byVariation.values()];
  }

  close(): void {
    this.flush();
    this.db.close();
  }
}
