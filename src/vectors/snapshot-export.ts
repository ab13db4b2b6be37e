// Reading a collection out as an export (snapshot-format.ts), streamed page by page.
//
// The export has a connection of its own in one read transaction, so that it is a consistent
// snapshot however long the client takes to read it: writes carry on (WAL mode) and are simply
// not in it. Pages are read by the primary key (tenant, id) after the last row sent, one page
// per pull of the stream, so neither the collection nor an open statement is held between
// pulls. The host's own connection is never used: it serves every other request meanwhile.
//
// A read transaction keeps the WAL from being checkpointed past it, so an export that is not
// read for `idleTimeoutMs` (a client that stopped reading but keeps its socket open) is
// destroyed, and its transaction and connection are let go. The count in the header is the
// collection's vector_count as of the same transaction (every write updates it with its rows).
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import Database from 'better-sqlite3';
import { collectionFromRow, type CollectionRow } from './rows.js';
import { headerLine, trailerLine, vectorLine } from './snapshot-format.js';
import type { CollectionRecord } from './types.js';

/** About this many bytes of stored vectors per page. */
const PAGE_BYTES = 256 * 1024;

interface ExportRow {
  tenant: string;
  id: string;
  vec: Buffer;
  properties: string;
}

export interface CollectionExport {
  record: CollectionRecord;
  vectorCount: number;
  stream: Readable;
}

export interface ExportOptions {
  /** The stream is destroyed after this long without a pull. */
  idleTimeoutMs: number;
  /** Called once, when the export's connection is closed (at the end, on an error, or idle). */
  onClose?: () => void;
}

/** The error an idle export is destroyed with. */
export class ExportIdleError extends Error {
  constructor(ms: number) {
    super(`the export was not read for ${ms} ms; its snapshot was released`);
    this.name = 'ExportIdleError';
  }
}

/** The export of collection `name` as of now, or undefined when there is none. */
export function openCollectionExport(dbPath: string, name: string, options: ExportOptions): CollectionExport | undefined {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    try {
      if (db.inTransaction) db.exec('ROLLBACK');
      db.close();
    } finally {
      options.onClose?.();
    }
  };
  try {
    db.pragma('busy_timeout = 5000');
    db.exec('BEGIN');
    const row = db.prepare('SELECT * FROM vector_collections WHERE name = ?').get(name) as CollectionRow | undefined;
    if (!row) {
      close();
      return undefined;
    }
    const record = collectionFromRow(row);
    // Kept by every write in the same transaction as its rows: no O(n) count(*) on this thread.
    const vectorCount = record.vectorCount;
    const page = db.prepare(
      `SELECT tenant, id, vec, properties FROM vectors
       WHERE collection_id = ? AND (tenant, id) > (?, ?) ORDER BY tenant, id LIMIT ?`,
    );
    const pageRows = Math.min(4096, Math.max(16, Math.ceil(PAGE_BYTES / (record.dimension * 4 + 64))));

    function* lines(): Generator<string> {
      try {
        const digest = crypto.createHash('sha256');
        const hashed = (text: string) => {
          digest.update(text, 'utf8');
          return text;
        };
        yield hashed(headerLine(record, vectorCount));
        let after = { tenant: '', id: '' }; // ids are never empty: before every row
        let sent = 0;
        for (;;) {
          const rows = page.all(record.id, after.tenant, after.id, pageRows) as ExportRow[];
          if (rows.length === 0) break;
          let text = '';
          for (const r of rows) text += vectorLine(record.multiTenant, r.tenant, r.id, r.vec, r.properties);
          sent += rows.length;
          const last = rows[rows.length - 1]!;
          after = { tenant: last.tenant, id: last.id };
          yield hashed(text);
          if (rows.length < pageRows) break;
        }
        yield trailerLine(sent, digest.digest('hex'));
      } finally {
        close();
      }
    }

    // One page per pull; the idle timer runs from the last pull (a stalled client pulls no more
    // once the socket's buffers are full).
    const source = lines();
    const stream = new Readable({
      read() {
        arm();
        try {
          const next = source.next();
          this.push(next.done ? null : next.value);
        } catch (err) {
          this.destroy(err as Error);
        }
      },
      destroy(err, callback) {
        try {
          source.return(undefined); // runs the generator's finally, if it began
        } finally {
          close();
          callback(err);
        }
      },
    });
    const arm = () => {
      clearTimeout(timer);
      if (closed) return;
      timer = setTimeout(() => stream.destroy(new ExportIdleError(options.idleTimeoutMs)), options.idleTimeoutMs);
      timer.unref();
    };
    stream.once('end', close);
    arm();
    return { record, vectorCount, stream };
  } catch (err) {
    close();
    throw err;
  }
}
