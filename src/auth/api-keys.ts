// API keys: `psk_<id>_<secret>`. The id is public (listed, revoked by), the secret is 32 random
// bytes whose SHA-256 alone is stored. A fast hash is right here: the secret has 256 bits of
// entropy, so there is nothing for a slow password hash to protect against.
import crypto from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { Db } from '../store/database.js';

export interface ApiKeyRecord {
  id: string;
  name: string;
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

export interface CreatedApiKey extends ApiKeyRecord {
  /** The full key, shown once. */
  key: string;
}

const KEY_PATTERN = /^psk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
/** The prefix every platform API key starts with; a JWT never does (its header is base64url JSON). */
const KEY_PREFIX = 'psk_';

/**
 * Whether a credential has the shape of a platform API key (`psk_...`), judged from its text
 * alone: nothing is looked up, so the answer says nothing about whether such a key exists.
 */
export const looksLikeApiKey = (credential: string): boolean => credential.startsWith(KEY_PREFIX);
const NAME_MAX = 128;

interface Row {
  id: string;
  name: string;
  secret_hash: Buffer;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
}

const toRecord = (r: Row): ApiKeyRecord => ({
  id: r.id,
  name: r.name,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
  lastUsedAt: r.last_used_at,
});

const hashSecret = (secret: string) => crypto.createHash('sha256').update(secret).digest();

export class ApiKeyStore {
  // A hash to compare against when the id is unknown, so that unknown and wrong keys take the
  // same time.
  private readonly decoyHash = hashSecret(crypto.randomBytes(32).toString('base64url'));

  constructor(
    private readonly db: Db,
    private readonly clock: () => number = Date.now,
  ) {}

  create(name = 'default'): CreatedApiKey {
    if (name.length === 0 || name.length > NAME_MAX) throw new RangeError(`key name must have 1 to ${NAME_MAX} characters`);
    const id = crypto.randomBytes(8).toString('hex');
    const secret = crypto.randomBytes(32).toString('base64url');
    const createdAt = this.clock();
    this.db
      .prepare('INSERT INTO api_keys (id, name, secret_hash, created_at) VALUES (?, ?, ?, ?)')
      .run(id, name, hashSecret(secret), createdAt);
    return { id, name, createdAt, revokedAt: null, lastUsedAt: null, key: `psk_${id}_${secret}` };
  }

  list(): ApiKeyRecord[] {
    return (this.db.prepare('SELECT * FROM api_keys ORDER BY created_at, id').all() as Row[]).map(toRecord);
  }

  get(id: string): ApiKeyRecord | undefined {
    const row = this.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(id) as Row | undefined;
    return row && toRecord(row);
  }

  /** Returns false when there is no such key. Revoking twice keeps the first time. */
  revoke(id: string): boolean {
    const found = this.db.prepare('SELECT 1 FROM api_keys WHERE id = ?').get(id);
    if (!found) return false;
    this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(this.clock(), id);
    return true;
  }

  /** The active key that `key` names, or undefined for a malformed, unknown, wrong or revoked key. */
  verify(key: string): ApiKeyRecord | undefined {
    const match = KEY_PATTERN.exec(key);
    const row = match
      ? (this.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(match[1]) as Row | undefined)
      : undefined;
    const presented = hashSecret(match?.[2] ?? key);
    const expected = row?.secret_hash ?? this.decoyHash;
    const equal = crypto.timingSafeEqual(presented, expected);
    if (!row || !equal || row.revoked_at !== null) return undefined;
    this.db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?').run(this.clock(), row.id);
    return toRecord(row);
  }

  /** Checked on every authenticated request, so the statement is prepared once. */
  isActive(id: string): boolean {
    this.activeStatement ??= this.db.prepare('SELECT revoked_at FROM api_keys WHERE id = ?');
    const row = this.activeStatement.get(id) as { revoked_at: number | null } | undefined;
    return row !== undefined && row.revoked_at === null;
  }

  private activeStatement: Statement | undefined;
}
