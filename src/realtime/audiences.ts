// Audiences: named header conditions that deployments attach variations to. An audience that a
// live or pending deployment routes by cannot be deleted, and an update that would change its
// meaning under traffic takes effect at once (routing reads it on every request). Routing reads
// compiled predicates from memory, never the database: the deployer loads those of the audiences
// its traffic names before the traffic goes live (`load`), and this store's writes keep them.
import type { Kysely, Selectable } from 'kysely';
import { forUpdate } from '../store/dialect.js';
import type { AudiencesTable, ControlPlaneTables } from '../store/schema.js';
import { conflict, invalidArgument, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { checkConditions, compileConditions, type Conditions, type HeaderPredicate } from './conditions.js';

export interface AudienceRecord {
  id: string;
  name: string;
  description: string;
  conditions: Conditions;
  createdAt: number;
  updatedAt: number;
}

export interface AudienceInput {
  name: string;
  description?: string;
  conditions?: unknown;
}

type Row = Selectable<AudiencesTable>;

const toRecord = (r: Row): AudienceRecord => ({
  id: r.id,
  name: r.name,
  description: r.description,
  conditions: JSON.parse(r.conditions) as Conditions,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Checks one audience definition; `at` is its place in the request, for error fields. */
export function checkAudience(input: AudienceInput, at: string): { name: string; description: string; conditions: Conditions } {
  if (typeof input.name !== 'string' || !NAME_PATTERN.test(input.name)) {
    throw invalidArgument(`${at}.name must be 1 to 64 letters, digits, "_", "." or "-", starting with a letter or digit`, `${at}.name`);
  }
  if (input.description !== undefined && (typeof input.description !== 'string' || input.description.length > 1024)) {
    throw invalidArgument(`${at}.description must be a string of at most 1024 characters`, `${at}.description`);
  }
  return { name: input.name, description: input.description ?? '', conditions: checkConditions(input.conditions, `${at}.conditions`) };
}

export class AudienceStore {
  // Compiled predicates of the audiences that live traffic may route by: loaded before a
  // deployment goes live, replaced on update and dropped on delete by this process, and compiled
  // again when the replica's snapshot is read after a change made elsewhere (`refresh`).
  private readonly predicates = new Map<string, HeaderPredicate>();
  /** updated_at of the row each predicate was compiled from. */
  private readonly compiledFrom = new Map<string, number>();

  constructor(
    private readonly db: Kysely<ControlPlaneTables>,
    /** Ids of audiences that deployments route by; those cannot be deleted. Read in the deleting transaction (`db`). */
    private readonly inUse: (db: Kysely<ControlPlaneTables>) => Promise<Set<string>>,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Creates every audience of a file in one transaction: all or none. */
  async createMany(inputs: AudienceInput[]): Promise<AudienceRecord[]> {
    const checked = inputs.map((input, i) => checkAudience(input, `spec.audiences[${i}]`));
    const now = this.clock();
    const rows = checked.map((a) => ({ id: newId('aud'), name: a.name, description: a.description, conditions: JSON.stringify(a.conditions), created_at: now, updated_at: now }));
    await this.db.transaction().execute(async (trx: Kysely<ControlPlaneTables>) => {
      await trx.insertInto('audiences').values(rows).execute();
    });
    return Promise.all(rows.map((r) => this.get(r.id)));
  }

  async update(id: string, input: AudienceInput): Promise<AudienceRecord> {
    await this.get(id);
    const a = checkAudience(input, 'spec.audiences[0]');
    const result = await this.db
      .updateTable('audiences')
      .set({ name: a.name, description: a.description, conditions: JSON.stringify(a.conditions), updated_at: this.clock() })
      .where('id', '=', id)
      .executeTakeFirst();
    // Deleted through another replica between the two statements.
    if (result.numUpdatedRows === 0n) throw notFound(`audience "${id}" does not exist`, 'audience_id');
    const audience = await this.get(id);
    if (this.predicates.has(id)) {
      this.predicates.set(id, compileConditions(audience.conditions));
      this.compiledFrom.set(id, audience.updatedAt);
    }
    return audience;
  }

  /**
   * Deletes an audience that no deployment routes by. The check and the delete share a
   * transaction that holds the audience's row locked on PostgreSQL; a deployment naming the
   * audience locks it too (DeploymentStore.launch), so the two take turns.
   */
  async delete(id: string): Promise<void> {
    await this.db.transaction().execute(async (trx: Kysely<ControlPlaneTables>) => {
      const row = await forUpdate(trx, trx.selectFrom('audiences').select('id').where('id', '=', id)).executeTakeFirst();
      if (!row) throw notFound(`audience "${id}" does not exist`, 'audience_id');
      if ((await this.inUse(trx)).has(id)) throw conflict(`audience "${id}" is used by a deployment; deploy without it first`, 'audience_id');
      await trx.deleteFrom('audiences').where('id', '=', id).execute();
    });
    this.predicates.delete(id);
    this.compiledFrom.delete(id);
  }

  async find(id: string): Promise<AudienceRecord | undefined> {
    const row = await this.db.selectFrom('audiences').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  async get(id: string): Promise<AudienceRecord> {
    const audience = await this.find(id);
    if (!audience) throw notFound(`audience "${id}" does not exist`, 'audience_id');
    return audience;
  }

  async list(): Promise<AudienceRecord[]> {
    const rows = await this.db.selectFrom('audiences').selectAll().orderBy('created_at').orderBy('id').execute();
    return rows.map(toRecord);
  }

  /** Reads and compiles the predicates of `ids` (an unknown audience matches nothing), for routing. */
  async load(ids: Iterable<string>): Promise<void> {
    const wanted = [...new Set(ids)];
    if (wanted.length === 0) return;
    const rows = await this.db.selectFrom('audiences').selectAll().where('id', 'in', wanted).execute();
    const found = new Map(rows.map((r) => [r.id, r]));
    for (const id of wanted) {
      const row = found.get(id);
      if (row && this.compiledFrom.get(id) === row.updated_at && this.predicates.has(id)) continue;
      this.predicates.set(id, row ? compileConditions(toRecord(row).conditions) : () => false);
      if (row) this.compiledFrom.set(id, row.updated_at);
      else this.compiledFrom.delete(id);
    }
  }

  /** Audiences as a part of the replica's snapshot: the predicates held, compiled again if they changed. */
  readonly snapshotPart = { name: 'audiences', apply: () => this.load([...this.predicates.keys()]) };

  /** The compiled predicate of an audience, from memory; one not loaded matches nothing. */
  predicate(id: string): HeaderPredicate {
    return this.predicates.get(id) ?? (() => false);
  }
}
