// Which API keys are revoked, held in memory so that the check on every authenticated request
// reads no database. A revocation made through this host is in force at once; one made elsewhere
// (`platform keys revoke` on the store, another replica on the same PostgreSQL) within one refresh
// interval, as the whole table's state is read again on a jittered timer. A key this host has not
// seen yet (made after the last refresh) is looked up once and then remembered.
import type { Kysely } from 'kysely';
import type { ControlPlaneTables } from '../store/schema.js';

export type KeyState = 'active' | 'revoked' | 'missing';

export class KeyRevocations {
  private revoked = new Set<string>();
  private active = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly db: Kysely<ControlPlaneTables>,
    /** Mean time between reads of the table; each wait is drawn from 0.75 to 1.25 times it. */
    private readonly refreshMs = 500,
  ) {}

  /** Reads every key's state and swaps the sets. */
  async refresh(): Promise<void> {
    const rows = await this.db.selectFrom('api_keys').select(['id', 'revoked_at']).execute();
    const revoked = new Set<string>();
    const active = new Set<string>();
    for (const r of rows) (r.revoked_at === null ? active : revoked).add(r.id);
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
    if (this.revoked.has(id)) return 'revoked';
    if (this.active.has(id)) return 'active';
    const row = await this.db.selectFrom('api_keys').select('revoked_at').where('id', '=', id).executeTakeFirst();
    if (row === undefined) return 'missing';
    (row.revoked_at === null ? this.active : this.revoked).add(id);
    return row.revoked_at === null ? 'active' : 'revoked';
  }
}
