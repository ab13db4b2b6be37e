// The model records of both kinds: an id in a project. Realtime models get builds and variations
// (src/realtime/); library models (LLMs, src/llm/library/) live in the project `library`.
import type { Db } from '../store/database.js';
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

interface Row {
  id: string;
  project: string;
  description: string;
  kind: ModelKind;
  created_at: number;
}

const toRecord = (r: Row): ModelRecord => ({ id: r.id, project: r.project, description: r.description, kind: r.kind, createdAt: r.created_at });

export class ModelStore {
  constructor(
    private readonly db: Db,
    private readonly clock: () => number = Date.now,
  ) {}

  create(id: string, project: string, description: string, kind: ModelKind = 'realtime'): ModelRecord {
    if (kind === 'realtime' && project === LIBRARY_PROJECT) {
      throw invalidArgument(`the project "${LIBRARY_PROJECT}" holds library models; choose another project`, 'project');
    }
    const reserved = reservedModelIdProblem(id);
    if (reserved) throw invalidArgument(reserved, 'model_id');
    if (this.find(id)) throw conflict(`model "${id}" already exists`, 'model_id');
    const createdAt = this.clock();
    this.db.prepare('INSERT INTO models (id, project, description, kind, created_at) VALUES (?, ?, ?, ?, ?)').run(id, project, description, kind, createdAt);
    return { id, project, description, kind, createdAt };
  }

  find(id: string): ModelRecord | undefined {
    const row = this.db.prepare('SELECT * FROM models WHERE id = ?').get(id) as Row | undefined;
    return row && toRecord(row);
  }

  get(id: string): ModelRecord {
    const model = this.find(id);
    if (!model) throw notFound(`model "${id}" does not exist`, 'model_id');
    return model;
  }

  list(project?: string): ModelRecord[] {
    const rows = (project === undefined
      ? this.db.prepare('SELECT * FROM models ORDER BY created_at, id').all()
      : this.db.prepare('SELECT * FROM models WHERE project = ? ORDER BY created_at, id').all(project)) as Row[];
    return rows.map(toRecord);
  }
}
