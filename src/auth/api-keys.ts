// API keys: `psk_<id>_<secret>`. The id is public (listed, revoked by), the secret is 32 random
// bytes whose SHA-256 alone is stored. A fast hash is right here: the secret has 256 bits of
// entropy, so there is nothing for a slow password hash to protect against.
import crypto from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { ApiKeysTable, ControlPlaneTables } from '../store/schema.js';
import { KeyRevocations, type KeyLookup, type KeyState } from './key-revocations.js';
import { DEFAULT_ROLE, grantOf, UNSCOPED, type KeyGrant, type KeyScope, type Role } from './roles.js';

export interface ApiKeyRecord {
  id: string;
  name: string;
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
  /** admin for keys made before roles existed. */
  role: Role;
  scope: KeyScope;
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

type Row = Selectable<ApiKeysTable>;

const toRecord = (r: Row): ApiKeyRecord => ({
  id: r.id,
  name: r.name,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
  lastUsedAt: r.last_used_at,
  ...grantOf(r),
});


const hashSecret = (secret: string) => crypto.createHash('sha256').update(secret).digest();

// On either engine of the store (SQLite in DATA_DIR, PostgreSQL at DATABASE_URL). No operation
// reads and then writes on what it read: revoking and recording a use are each one conditional
// UPDATE, so that the host, the CLI and other replicas writing at once need no locks.
export class ApiKeyStore {
  // A hash to compare against when the id is unknown, so that unknown and wrong keys take the
  // same time.
  private readonly decoyHash = hashSecret(crypto.randomBytes(32).toString('base64url'));

  /** What `isActive` answers from: the keys' revocations, in memory. */
  readonly revocations: KeyRevocations;

  constructor(
    private readonly db: Kysely<ControlPlaneTables>,
    private readonly clock: () => number = Date.now,
    revocationRefreshMs?: number,
  ) {
    this.revocations = new KeyRevocations(db, revocationRefreshMs);
  }

  /** A key with `grant`'s role and scope (already checked: roles.ts checkRole, checkScope); admin and unscoped by default. */
  async create(name = 'default', grant: KeyGrant = { role: DEFAULT_ROLE, scope: UNSCOPED }): Promise<CreatedApiKey> {
    if (name.length === 0 || name.length > NAME_MAX) throw new RangeError(`key name must have 1 to ${NAME_MAX} characters`);
    const id = crypto.randomBytes(8).toString('hex');
    const secret = crypto.randomBytes(32).toString('base64url');
    const createdAt = this.clock();
    await this.db
      .insertInto('api_keys')
      .values({
        id,
        name,
        secret_hash: hashSecret(secret),
        created_at: createdAt,
        revoked_at: null,
        last_used_at: null,
        role: grant.role,
        scope_project: grant.scope.project,
        scope_collections: grant.scope.collections && JSON.stringify(grant.scope.collections),
        scope_tenants: grant.scope.tenants && JSON.stringify(grant.scope.tenants),
      })
      .execute();
    return { id, name, createdAt, revokedAt: null, lastUsedAt: null, ...grant, key: `psk_${id}_${secret}` };
  }

  async list(): Promise<ApiKeyRecord[]> {
    const rows = await this.db.selectFrom('api_keys').selectAll().orderBy('created_at').orderBy('id').execute();
    return rows.map(toRecord);
  }

  async get(id: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  /** Returns false when there is no such key. Revoking twice keeps the first time. */
  async revoke(id: string): Promise<boolean> {
    // The UPDATE decides alone (only an active key gets a time), so that two revokes at once, on
    // any engine, keep the first time; a key it did not change either was revoked already or
    // does not exist, which the SELECT tells (keys are never deleted).
    const updated = await this.db
      .updateTable('api_keys')
      .set({ revoked_at: this.clock() })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (updated.numUpdatedRows > 0n) {
      this.revocations.markRevoked(id);
      return true;
    }
    const found = await this.db.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst();
    return found !== undefined;
  }

  /** The active key that `key` names, or undefined for a malformed, unknown, wrong or revoked key. */
  async verify(key: string): Promise<ApiKeyRecord | undefined> {
    const match = KEY_PATTERN.exec(key);
    const row = match ? await this.db.selectFrom('api_keys').selectAll().where('id', '=', match[1]!).executeTakeFirst() : undefined;
    const presented = hashSecret(match?.[2] ?? key);
    const expected = row?.secret_hash ?? this.decoyHash;
    const equal = crypto.timingSafeEqual(presented, expected);
    if (!row || !equal || row.revoked_at !== null) return undefined;
    // Recorded only while the key is still active: a key revoked since the SELECT is refused.
    const used = await this.db
      .updateTable('api_keys')
      .set({ last_used_at: this.clock() })
      .where('id', '=', row.id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (used.numUpdatedRows === 0n) return undefined;
    return toRecord(row);
  }

  /**
   * Checked on every authenticated request, from memory (key-revocations.ts): a revocation through
   * this store is in force at once, one made elsewhere within the refresh interval once
   * `revocations.start()` runs.
   */
  isActive(id: string): Promise<boolean> {
    return this.revocations.isActive(id);
  }

  /** As isActive, telling a revoked key from one that does not exist. */
  keyState(id: string): Promise<KeyState> {
    return this.revocations.state(id);
  }

  /** As keyState, with an active key's role and scope: what every authenticated request is decided from. */
  lookup(id: string): Promise<KeyLookup> {
    return this.revocations.lookup(id);
  }
}
