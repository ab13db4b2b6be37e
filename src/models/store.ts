// The model records of both kinds: an id in a project. Realtime models get builds and variations
// (src/realtime/); library models (LLMs, src/llm/library/) live in the project `library`.
import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../store/dialect.js';
import type { ControlPlaneTables, ModelsTable } from '../store/schema.js';
import { conflict, invalidArgument, notFound } from '../errors.js';
import { LIBRARY_PROJECT, reservedModelIdProblem } from './names.js';

export type ModelKind = 'realtime' | 'library';

export interface ModelRecord {
  id: string;
  project: string;
  description: string;
  kind: ModelKind;
  createdAt: number;
}

type Row = Selectable<ModelsTable>;

const toRecord = (r: Row): ModelRecord => ({ id: r.id, project: r.project, description: r.description, kind: r.kind, createdAt: r.created_at });

/** The query builder, or a transaction of it (a caller that writes more rows with the model's). */
type Executor = Kysely<ControlPlaneTables>;

export class ModelStore {
  constructor(
    private readonly db: Kysely<ControlPlaneTables>,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Creates the model; `db` may be the caller's transaction, so that the model's row commits with
   * the caller's rows or not at all. A duplicate id is a 409 on either engine: the primary key
   * decides, so two replicas creating the same id at once get one 201 and one 409.
   */
  async create(id: string, project: string, description: string, kind: ModelKind = 'realtime', db: Executor = this.db): Promise<ModelRecord> {
    if (kind === 'realtime' && project === LIBRARY_PROJECT) {
      throw invalidArgument(`the project "${LIBRARY_PROJECT}" holds library models; choose another project`, 'project');
    }
    const reserved = reservedModelIdProblem(id);
    if (reserved) throw invalidArgument(reserved, 'model_id');
    const createdAt = this.clock();
    try {
      await db.insertInto('models').values({ id, project, description, kind, created_at: createdAt }).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`model "${id}" already exists`, 'model_id');
      throw err;
    }
    return { id, project, description, kind, createdAt };
  }

  async find(id: string, db: Executor = this.db): Promise<ModelRecord | undefined> {
    const row = await db.selectFrom('models').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  async get(id: string, db: Executor = this.db): Promise<ModelRecord> {
    const model = await this.find(id, db);
    if (!model) throw notFound(`model "${id}" does not exist`, 'model_id');
    return model;
  }

  async list(project?: string): Promise<ModelRecord[]> {
    let query = this.db.selectFrom('models').selectAll();
    if (project !== undefined) query = query.where('project', '=', project);
    const rows = await query.orderBy('created_at').orderBy('id').execute();
    return rows.map(toRecord);
  }
}
