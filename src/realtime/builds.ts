// Builds: an uploaded ONNX file plus its feature and output names. The file is parsed, checked
// against the executor's operator table and its features derived before anything is stored, so
// a refused upload leaves nothing behind; the file is then written atomically under DATA_DIR.
//
// Where the bytes live depends on the engine. On SQLite (one host, one DATA_DIR) the file under
// DATA_DIR is the copy of record: builds/<model>/<build>.onnx. On PostgreSQL (replicas that share
// the database, not a disk) the copy of record is the table build_blobs, one row per distinct
// sha256, and each replica caches the bytes in its own DATA_DIR at builds/sha256/<sha256>.onnx; a
// cached file is used only when its sha256 matches, else it is fetched again.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Kysely } from 'kysely';
import { isPostgres } from '../store/dialect.js';
import type { BuildsTable, ControlPlaneTables } from '../store/schema.js';
import { invalidArgument, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { privateDir } from '../store/private-files.js';
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

type Row = BuildsTable;

const sha256Of = (bytes: Uint8Array): string => crypto.createHash('sha256').update(bytes).digest('hex');

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
    // A fault in the names given for the model is in their field; any other, in the file.
    if (err instanceof OnnxModelError) throw invalidArgument(err.message, err.param ?? 'file');
    throw err;
  }
}

export class BuildStore {
  constructor(
    private readonly db: Kysely<ControlPlaneTables>,
    private readonly dataDir: string,
    private readonly clock: () => number = Date.now,
  ) {}

  async create(modelId: string, bytes: Uint8Array, options: BuildOptions): Promise<BuildRecord> {
    const { model, schema } = prepareModel(bytes, options);
    const id = newId('bld');
    const sha256 = sha256Of(bytes);
    const shared = isPostgres(this.db);
    const relative = shared ? cacheFile(sha256) : path.join('builds', modelId, `${id}.onnx`);
    // The file first: a disk that refuses it fails the upload before anything is recorded (on
    // PostgreSQL it is this replica's cache, and a stray one is harmless: named by its content).
    writeFileAtomic(path.join(this.dataDir, relative), bytes);
    const record: BuildRecord = {
      id,
      modelId,
      sha256,
      sizeBytes: bytes.byteLength,
      features: schema.features.map((f) => ({ name: f.name, type: f.elemType })),
      outputs: schema.outputs.map((o) => o.name),
      operators: [...new Set(model.graph.nodes.map((n) => qualifiedOpType(n.domain, n.opType)))],
      opsets: model.opsetImports,
      createdAt: this.clock(),
    };
    const row: Row = {
      id,
      model_id: modelId,
      file: relative,
      sha256,
      size_bytes: record.sizeBytes,
      features: JSON.stringify(record.features),
      outputs: JSON.stringify(record.outputs),
      operators: JSON.stringify(record.operators),
      opsets: JSON.stringify(record.opsets),
      created_at: record.createdAt,
    };
    if (!shared) {
      await this.db.insertInto('builds').values(row).execute();
      return record;
    }
    await this.db.transaction().execute(async (trx) => {
      // Content-addressed: the same bytes uploaded again (or by two replicas at once) stay one row.
      await trx
        .insertInto('build_blobs')
        .values({ sha256, bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), size_bytes: record.sizeBytes, created_at: record.createdAt })
        .onConflict((oc) => oc.column('sha256').doNothing())
        .execute();
      await trx.insertInto('builds').values(row).execute();
    });
    return record;
  }

  async find(id: string): Promise<BuildRecord | undefined> {
    const row = await this.db.selectFrom('builds').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  /** The build, which must belong to `modelId`. */
  async get(modelId: string, id: string): Promise<BuildRecord> {
    const build = await this.find(id);
    if (!build || build.modelId !== modelId) throw notFound(`model "${modelId}" has no build "${id}"`, 'build_id');
    return build;
  }

  async list(modelId: string): Promise<BuildRecord[]> {
    const rows = await this.db.selectFrom('builds').selectAll().where('model_id', '=', modelId).orderBy('created_at').orderBy('id').execute();
    return rows.map(toRecord);
  }

  /** Reads the stored file back and prepares it with the names recorded at upload. */
  async prepare(id: string): Promise<PreparedBuild> {
    const row = await this.db.selectFrom('builds').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw notFound(`build "${id}" does not exist`, 'build_id');
    const record = toRecord(row);
    const bytes = await this.bytes(row);
    const { model, schema } = prepareModel(bytes, {
      featureNames: record.features.map((f) => f.name),
      outputNames: record.outputs,
    });
    return { record, model, schema };
  }

  /** A build's ONNX bytes: the file in DATA_DIR, or on PostgreSQL this replica's checked cache of the blob. */
  private async bytes(row: Row): Promise<Buffer> {
    const file = path.join(this.dataDir, row.file);
    if (!isPostgres(this.db)) return fs.readFileSync(file);
    const cached = readIfPresent(file);
    if (cached && sha256Of(cached) === row.sha256) return cached;
    const blob = await this.db.selectFrom('build_blobs').select('bytes').where('sha256', '=', row.sha256).executeTakeFirst();
    if (!blob) throw new Error(`build "${row.id}": no stored bytes with sha256 ${row.sha256}`);
    const bytes = Buffer.from(blob.bytes);
    if (sha256Of(bytes) !== row.sha256) throw new Error(`build "${row.id}": the stored bytes do not match their sha256 ${row.sha256}`);
    writeFileAtomic(file, bytes);
    return bytes;
  }
}

/** A replica's cache file of a blob, relative to DATA_DIR. */
function cacheFile(sha256: string): string {
  return path.join('builds', 'sha256', `${sha256}.onnx`);
}

function readIfPresent(file: string): Buffer | undefined {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function writeFileAtomic(file: string, bytes: Uint8Array): void {
  privateDir(path.dirname(file));
  // Unique per write: two loads of the same blob in one process may cache it at once.
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.fchmodSync(fd, 0o600); // whatever the umask
    fs.writeSync(fd, bytes);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}
