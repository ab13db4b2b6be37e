// Audiences: named header conditions that deployments attach variations to. An audience that a
// live or pending deployment routes by cannot be deleted, and an update that would change its
// meaning under traffic takes effect at once (routing reads it on every request).
import type { Db } from '../store/database.js';
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

interface Row {
  id: string;
  name: string;
  description: string;
  conditions: string;
  created_at: number;
  updated_at: number;
}

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
  // Compiled predicates; only this process writes audiences, so dropping an entry on update or
  // delete keeps the cache exact.
  private readonly predicates = new Map<string, HeaderPredicate>();

  constructor(
    private readonly db: Db,
    /** Ids of audiences that deployments route by; those cannot be deleted. */
    private readonly inUse: () => Set<string>,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Creates every audience of a file in one transaction: all or none. */
  createMany(inputs: AudienceInput[]): AudienceRecord[] {
    const checked = inputs.map((input, i) => checkAudience(input, `spec.audiences[${i}]`));
    const now = this.clock();
    const insert = this.db.prepare('INSERT INTO audiences (id, name, description, conditions, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)');
    const ids = this.db.transaction(() =>
      checked.map((a) => {
        const id = newId('aud');
        insert.run(id, a.name, a.description, JSON.stringify(a.conditions), now, now);
        return id;
      }),
    )();
    return ids.map((id) => this.get(id));
  }

  update(id: string, input: AudienceInput): AudienceRecord {
    this.get(id);
    const a = checkAudience(input, 'spec.audiences[0]');
    this.db
      .prepare('UPDATE audiences SET name = ?, description = ?, conditions = ?, updated_at = ? WHERE id = ?')
      .run(a.name, a.description, JSON.stringify(a.conditions), this.clock(), id);
    this.predicates.delete(id);
    return this.get(id);
  }

  delete(id: string): void {
    this.get(id);
    if (this.inUse().has(id)) throw conflict(`audience "${id}" is used by a deployment; deploy without it first`, 'audience_id');
    this.db.prepare('DELETE FROM audiences WHERE id = ?').run(id);
    this.predicates.delete(id);
  }

  find(id: string): AudienceRecord | undefined {
    const row = this.db.prepare('SELECT * FROM audiences WHERE id = ?').get(id) as Row | undefined;
    return row && toRecord(row);
  }

  get(id: string): AudienceRecord {
    const audience = this.find(id);
    if (!audience) throw notFound(`audience "${id}" does not exist`, 'audience_id');
    return audience;
  }

  list(): AudienceRecord[] {
    return (this.db.prepare('SELECT * FROM audiences ORDER BY created_at, id').all() as Row[]).map(toRecord);
  }

  /** The compiled predicate of an audience; an unknown audience matches nothing. */
  predicate(id: string): HeaderPredicate {
    let test = this.predicates.get(id);
    if (!test) {
      const audience = this.find(id);
      test = audience ? compileConditions(audience.conditions) : () => false;
      this.predicates.set(id, test);
    }
    return test;
  }
}
