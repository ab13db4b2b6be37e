// Which API keys are revoked, held in memory so that the check on every authenticated request
// reads no database. A revocation made through this host is in force at once; one made elsewhere
// (`platform keys revoke` on the store, another replica on the same PostgreSQL) within one refresh
// interval, as the whole table's state is read again on a jittered timer. A key this host has not
// seen yet (made after the last refresh) is looked up once and then remembered. An active key's
// role and scope are held with it: they never change once the key is made, so that the check of
// every request (src/auth/permissions.ts) reads no database either.
import type { Kysely } from 'kysely';
import type { ControlPlaneTables } from '../store/schema.js';
import { grantOf, type KeyGrant } from './roles.js';

export type KeyState = 'active' | 'revoked' | 'missing';

export type KeyLookup = { state: 'active'; grant: KeyGrant } | { state: 'revoked' | 'missing' };

const GRANT_COLUMNS = ['role', 'scope_project', 'scope_collections', 'scope_tenants'] as const;

export class KeyRevocations {
  private revoked = new Set<string>();
  private active = new Map<string, KeyGrant>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly db: Kysely<ControlPlaneTables>,
    /** Mean time between reads of the table; each wait is drawn from 0.75 to 1.25 times it. */
    private readonly refreshMs = 500,
  ) {}

  /** Reads every key's state and swaps the sets. */
  async refresh(): Promise<void> {
    const rows = await this.db.selectFrom('api_keys').select(['id', 'revoked_at', ...GRANT_COLUMNS]).execute();
    const revoked = new Set<string>();
    const active = new Map<string, KeyGrant>();
    for (const r of rows) {
      if (r.revoked_at === null) active.set(r.id, grantOf(r));
      else revoked.add(r.id);
    }
    // A revocation made here while the read ran is kept: the read may have started before it.
    for (const id of this.revoked) {
      if (active.delete(id)) revoked.add(id);
    }
    this.revoked = revoked;
    this.active = active;
  }

  /** Revocations as a part of the replica's snapshot (src/cluster/config-sync.ts), read again on every change. */
  readonly snapshotPart = { name: 'keys', apply: () => this.refresh() };

  /** Reads the table now, then again and again until `stop`. */
  async start(): Promise<void> {
    await this.refresh();
    const next = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        this.refresh()
          .catch(() => undefined) // a failed read keeps the last state; the next one tries again
          .finally(next);
      }, this.refreshMs * (0.75 + Math.random() / 2));
      this.timer.unref();
    };
    next();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** A revocation made through this host: in force at once. */
  markRevoked(id: string): void {
    this.active.delete(id);
    this.revoked.add(id);
  }

  async isActive(id: string): Promise<boolean> {
    return (await this.state(id)) === 'active';
  }

  /** Whether the key `id` is active, revoked, or no key at all (never remembered: it may be made later). */
  async state(id: string): Promise<KeyState> {
    return (await this.lookup(id)).state;
  }

  /** As state, with an active key's role and scope. */
  async lookup(id: string): Promise<KeyLookup> {
    if (this.revoked.has(id)) return { state: 'revoked' };
    const known = this.active.get(id);
    if (known) return { state: 'active', grant: known };
    const row = await this.db.selectFrom('api_keys').select(['revoked_at', ...GRANT_COLUMNS]).where('id', '=', id).executeTakeFirst();
    if (row === undefined) return { state: 'missing' };
    if (row.revoked_at !== null) {
      this.revoked.add(id);
      return { state: 'revoked' };
    }
    const grant = grantOf(row);
    this.active.set(id, grant);
    return { state: 'active', grant };
  }
}
