// The embedded store: WAL mode, durable writes, and versioned migrations applied once, in order.
import Database from 'better-sqlite3';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATABASE_FILE, migrate, openDatabase, schemaVersion } from '../src/store/database.js';
import { migrations } from '../src/store/migrations.js';
import { tempDir } from './helpers/paths.js';

describe('database', () => {
  it('opens in WAL mode with synchronous FULL and applies every migration', () => {
    const db = openDatabase(tempDir());
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    expect(schemaVersion(db)).toBe(Math.max(...migrations.map((m) => m.version)));
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'api_keys'").get()).toBeDefined();
    db.close();
  });

  it('applies only the migrations newer than the database, in version order', () => {
    const dir = tempDir();
    const first = [{ version: 1, name: 'a', sql: 'CREATE TABLE a (x INTEGER)' }];
    const db = openDatabase(dir, first);
    db.prepare('INSERT INTO a VALUES (1)').run();
    db.close();
    const more = [
      { version: 3, name: 'c', sql: 'ALTER TABLE a ADD COLUMN z INTEGER' },
      ...first,
      { version: 2, name: 'b', sql: 'ALTER TABLE a ADD COLUMN y INTEGER' },
    ];
    const again = openDatabase(dir, more);
    expect(again.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: 1, name: 'a' },
      { version: 2, name: 'b' },
      { version: 3, name: 'c' },
    ]);
    expect(again.prepare('SELECT * FROM a').all()).toEqual([{ x: 1, y: null, z: null }]);
    again.close();
  });

  it('rolls back a failing migration and leaves the version unchanged', () => {
    const dir = tempDir();
    const bad = [
      { version: 1, name: 'a', sql: 'CREATE TABLE a (x INTEGER)' },
      { version: 2, name: 'broken', sql: 'CREATE TABLE b (y INTEGER); CREATE TABLE a (x INTEGER)' },
    ];
    expect(() => openDatabase(dir, bad)).toThrow(/already exists/);
    const raw = new Database(path.join(dir, DATABASE_FILE));
    expect(raw.prepare('SELECT MAX(version) FROM schema_migrations').pluck().get()).toBe(1);
    expect(raw.prepare("SELECT name FROM sqlite_master WHERE name = 'b'").get()).toBeUndefined();
    raw.close();
  });

  it('refuses a database written by a newer version', () => {
    const dir = tempDir();
    openDatabase(dir).close();
    const raw = new Database(path.join(dir, DATABASE_FILE));
    raw.prepare('INSERT INTO schema_migrations VALUES (999, ?, ?)').run('future', Date.now());
    raw.close();
    expect(() => openDatabase(dir)).toThrow(/newer version/);
  });

  it('migration 7 gives the library deployments that FAILED before it the kind their reason tells', () => {
    const dir = tempDir();
    const before = openDatabase(dir, migrations.filter((m) => m.version <= 6));
    expect(schemaVersion(before)).toBe(6);
    // The reasons the host wrote before migration 7 (src/llm/library/service.ts at that time):
    // restore()'s for a load a restart interrupted, the GGUF reader's for a missing file, and any
    // other load error's own message.
    const rows: Array<[string, string, string | null]> = [
      ['restarted', 'FAILED', 'interrupted by a restart of the host'],
      ['gone', 'FAILED', "cannot open /srv/models/gone.gguf: ENOENT: no such file or directory, open '/srv/models/gone.gguf'"],
      ['broken', 'FAILED', 'GGUF file is truncated: expected 4096 bytes of tensor data'],
      ['serving', 'LIVE', null],
      ['loading', 'DEPLOYING', null],
    ];
    for (const [id, status, reason] of rows) {
      before.prepare("INSERT INTO models (id, project, description, kind, created_at) VALUES (?, 'library', '', 'library', 1)").run(id);
      before
        .prepare("INSERT INTO library_deployments (model_id, name, file, instance_type, status, reason, created_at, updated_at) VALUES (?, ?, ?, 'cpu', ?, ?, 1, 1)")
        .run(id, id, `${id}.gguf`, status, reason);
    }
    before.close();

    const after = openDatabase(dir);
    expect(schemaVersion(after)).toBe(Math.max(...migrations.map((m) => m.version)));
    const kinds = Object.fromEntries(
      (after.prepare('SELECT model_id, failure_kind FROM library_deployments').all() as Array<{ model_id: string; failure_kind: string | null }>).map((r) => [r.model_id, r.failure_kind]),
    );
    expect(kinds).toEqual({ restarted: 'interrupted', gone: 'missing_file', broken: 'load_error', serving: null, loading: null });
    // The reasons themselves are kept as they were.
    expect(after.prepare("SELECT reason FROM library_deployments WHERE model_id = 'restarted'").pluck().get()).toBe('interrupted by a restart of the host');
    after.close();
  });

  it('migrate is idempotent', () => {
    const db = openDatabase(tempDir());
    const before = schemaVersion(db);
    migrate(db, migrations);
    expect(schemaVersion(db)).toBe(before);
    db.close();
  });
});
