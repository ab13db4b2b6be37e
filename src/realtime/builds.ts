// Builds: an uploaded ONNX file plus its feature and output names. The file is parsed, checked
// against the executor's operator table and its features derived before anything is stored, so
// a refused upload leaves nothing behind; the file is then written atomically under DATA_DIR.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Db } from '../store/database.js';
import { invalidArgument, notFound } from '../errors.js';
import { newId } from '../ids.js';
import {
  OnnxModelError,
  deriveFeatures,
  inputsHandlingMissingValues,
  normalize,
  parseOnnxModel,
  qualifiedOpType,
  type FeatureSchema,
  type NormalizedModel,
} from '../tabular/onnx/index.js';

export interface BuildRecord {
  id: string;
  modelId: string;
  sha256: string;
  sizeBytes: number;
  features: Array<{ name: string; type: string }>;
  outputs: string[];
  operators: string[];
  opsets: Record<string, number>;
  createdAt: number;
}

export interface BuildOptions {
  featureNames?: string[];
  outputNames?: string[];
}

/** A build's feature schema and what the predict path needs besides it to fill the inputs. */
export interface ServingSchema extends FeatureSchema {
  /**
   * The graph inputs whose missing values the model handles (an Imputer or a tree ensemble reads
   * them: `inputsHandlingMissingValues`), so a null or "NaN" for their features is sent as NaN;
   * elsewhere it is refused.
   */
  missingValueInputs: ReadonlySet<string>;
}

/** A build read back and made ready for the executor. */
export interface PreparedBuild {
  record: BuildRecord;
  model: NormalizedModel;
  schema: ServingSchema;
}

interface Row {
  id: string;
  model_id: string;
  file: string;
  sha256: string;
  size_bytes: number;
  features: string;
  outputs: string;
  operators: string;
  opsets: string;
  created_at: number;
}

const toRecord = (r: Row): BuildRecord => ({
  id: r.id,
  modelId: r.model_id,
  sha256: r.sha256,
  sizeBytes: r.size_bytes,
  features: JSON.parse(r.features) as BuildRecord['features'],
  outputs: JSON.parse(r.outputs) as string[],
  operators: JSON.parse(r.operators) as string[],
  opsets: JSON.parse(r.opsets) as Record<string, number>,
  createdAt: r.created_at,
});

/** Parses, checks and derives; throws a 400 ApiError naming the problem. */
export function prepareModel(bytes: Uint8Array, options: BuildOptions): { model: NormalizedModel; schema: ServingSchema } {
  try {
    const model = normalize(parseOnnxModel(bytes));
    const schema = { ...deriveFeatures(model, options), missingValueInputs: inputsHandlingMissingValues(model) };
    return { model, schema };
  } catch (err) {
    if (err instanceof OnnxModelError) throw invalidArgument(err.message, 'file');
    throw err;
  }
}

export class BuildStore {
  constructor(
    private readonly db: Db,
    private readonly dataDir: string,
    private readonly clock: () => number = Date.now,
  ) {}

  create(modelId: string, bytes: Uint8Array, options: BuildOptions): BuildRecord {
    const { model, schema } = prepareModel(bytes, options);
    const id = newId('bld');
    const relative = path.join('builds', modelId, `${id}.onnx`);
    writeFileAtomic(path.join(this.dataDir, relative), bytes);
    const record: BuildRecord = {
      id,
      modelId,
      sha256: crypto.createHash('sha256').update(bytes).digest('hex'),
      sizeBytes: bytes.byteLength,
      features: schema.features.map((f) => ({ name: f.name, type: f.elemType })),
      outputs: schema.outputs.map((o) => o.name),
      operators: [...new Set(model.graph.nodes.map((n) => qualifiedOpType(n.domain, n.opType)))],
      opsets: model.opsetImports,
      createdAt: this.clock(),
    };
    this.db
      .prepare(
        `INSERT INTO builds (id, model_id, file, sha256, size_bytes, features, outputs, operators, opsets, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, modelId, relative, record.sha256, record.sizeBytes, JSON.stringify(record.features), JSON.stringify(record.outputs), JSON.stringify(record.operators), JSON.stringify(record.opsets), record.createdAt);
    return record;
  }

  find(id: string): BuildRecord | undefined {
    const row = this.db.prepare('SELECT * FROM builds WHERE id = ?').get(id) as Row | undefined;
    return row && toRecord(row);
  }

  /** The build, which must belong to `modelId`. */
  get(modelId: string, id: string): BuildRecord {
    const build = this.find(id);
    if (!build || build.modelId !== modelId) throw notFound(`model "${modelId}" has no build "${id}"`, 'build_id');
    return build;
  }

  list(modelId: string): BuildRecord[] {
    return (this.db.prepare('SELECT * FROM builds WHERE model_id = ? ORDER BY created_at, id').all(modelId) as Row[]).map(toRecord);
  }

  /** Reads the stored file back and prepares it with the names recorded at upload. */
  prepare(id: string): PreparedBuild {
    const row = this.db.prepare('SELECT * FROM builds WHERE id = ?').get(id) as Row | undefined;
    if (!row) throw notFound(`build "${id}" does not exist`, 'build_id');
    const record = toRecord(row);
    const bytes = fs.readFileSync(path.join(this.dataDir, row.file));
    const { model, schema } = prepareModel(bytes, {
      featureNames: record.features.map((f) => f.name),
      outputNames: record.outputs,
    });
    return { record, model, schema };
  }
}

function writeFileAtomic(file: string, bytes: Uint8Array): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, bytes);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}
