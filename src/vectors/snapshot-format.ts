// The export of a collection: one self-describing NDJSON file that imports back exactly.
//
//   {"format":"platform-vector-collection","version":1,"values":"float32-le-base64",
//    "collection":{"name":..,"dimension":..,"metric":..,"description":..,"multi_tenant":..,"hnsw":{..}},
//    "vector_count":N}
//   {"id":"a","tenant_id":"t","values":"AACAPwAAAEA=","properties":{..}}    one line per vector, by tenant then id
//   {"end":true,"vector_count":N,"sha256":"<hex digest of every byte before this line>"}
//
// Values travel as the stored float32 bytes (little-endian) in base64: bit-exact, where decimal
// JSON would turn -0 into 0, and about a third of the size of the decimal text. `tenant_id` is
// present only in a multi-tenant collection. The last line's count and digest turn a truncated or
// damaged file into a refusal, never a partial import.
//
// The writers run on the main thread (snapshot-export.ts); SnapshotReader runs in the ingest
// worker, fed the import body as it arrives, and checks everything before the index worker
// writes anything.
import crypto from 'node:crypto';
import { invalidArgument } from '../errors.js';
import { describeValidationError, describeValue, jsonDepthMessage, jsonTooDeep, validatorCompiler } from '../validation.js';
import { checkId, checkPropertiesText, checkTenant, collectionDefinitionJson, collectionDefinitionSchema, isPlainObject } from './requests.js';
import type { CollectionRecord, ImportBatch, NewCollection, Properties } from './types.js';

export const SNAPSHOT_FORMAT = 'platform-vector-collection';
export const SNAPSHOT_VERSION = 1;
export const SNAPSHOT_CONTENT_TYPE = 'application/x-ndjson';
const VALUES_ENCODING = 'float32-le-base64';

// ---- writing ----

export function headerLine(c: CollectionRecord, vectorCount: number): string {
  const collection = collectionDefinitionJson(c);
  return JSON.stringify({ format: SNAPSHOT_FORMAT, version: SNAPSHOT_VERSION, values: VALUES_ENCODING, collection, vector_count: vectorCount }) + '\n';
}

/** One vector as stored: its float32 blob and its properties' JSON text go out as they are. */
export function vectorLine(multiTenant: boolean, tenant: string, id: string, vec: Buffer, propertiesJson: string): string {
  const who = multiTenant ? `"id":${JSON.stringify(id)},"tenant_id":${JSON.stringify(tenant)}` : `"id":${JSON.stringify(id)}`;
  return `{${who},"values":"${vec.toString('base64')}","properties":${propertiesJson}}\n`;
}

export function trailerLine(vectorCount: number, sha256: string): string {
  return JSON.stringify({ end: true, vector_count: vectorCount, sha256 }) + '\n';
}

// ---- reading ----

// The definition as a create body takes it, with every field required.
const definition = collectionDefinitionSchema;
const headerSchema = {
  type: 'object',
  required: ['collection', 'vector_count'],
  properties: {
    collection: {
      ...definition,
      required: ['name', 'dimension', 'metric', 'description', 'multi_tenant', 'hnsw'],
      properties: { ...definition.properties, hnsw: { ...definition.properties.hnsw, required: ['m', 'ef_construction', 'ef'] } },
    },
    vector_count: { type: 'integer', minimum: 0 },
  },
} as const;
const validateHeader = validatorCompiler({ schema: headerSchema, method: 'POST', url: '/api/v1/vectors/import', httpPart: 'body' }) as ((data: unknown) => boolean) & {
  errors?: Parameters<typeof describeValidationError>[0][] | null;
};

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const NEWLINE = 0x0a;

/** A refusal of a damaged or foreign file, naming the line (1-based). */
const damaged = (line: number, what: string) => invalidArgument(`the export is damaged or not an export: line ${line}: ${what}`);

function parseLine(text: string, line: number): Record<string, unknown> {
  if (jsonTooDeep(text)) throw damaged(line, jsonDepthMessage('the line'));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw damaged(line, `not valid JSON (${(err as Error).message})`);
  }
  if (!isPlainObject(value)) throw damaged(line, 'not a JSON object');
  return value;
}

function parseHeader(text: string): NewCollection & { vectorCount: number } {
  const h = parseLine(text, 1);
  if (h.format !== SNAPSHOT_FORMAT) throw damaged(1, `"format" is not "${SNAPSHOT_FORMAT}"; this is not a vector collection export`);
  if (h.version !== SNAPSHOT_VERSION) throw damaged(1, `"version" is ${describeValue(h.version)}; this host reads version ${SNAPSHOT_VERSION}`);
  if (h.values !== VALUES_ENCODING) throw damaged(1, `"values" is ${describeValue(h.values)}; this host reads "${VALUES_ENCODING}"`);
  if (!validateHeader(h)) {
    const { message } = describeValidationError(validateHeader.errors![0]!, 'the header');
    throw damaged(1, message);
  }
  const c = h.collection as { name: string; dimension: number; metric: NewCollection['metric']; description: string; multi_tenant: boolean; hnsw: Record<string, number> };
  return {
    name: c.name,
    dimension: c.dimension,
    metric: c.metric,
    description: c.description,
    multiTenant: c.multi_tenant,
    hnsw: { m: c.hnsw.m!, efConstruction: c.hnsw.ef_construction!, ef: c.hnsw.ef! },
    vectorCount: h.vector_count as number,
  };
}

/** The longest line read (any vector an upsert could write fits many times over). */
export const MAX_LINE_BYTES = 256 * 1024 * 1024;

/** At most this many bytes of values are reserved on the header's word (it may be a lie); beyond, they grow. */
const MAX_RESERVED_BYTES = 64 * 1024 * 1024;

/**
 * Reads an export as it arrives, chunk by chunk (an import body streamed to the ingest worker),
 * and packs it for the index worker as the collection `name` when given. Only the packed values,
 * ids and properties are held, never the file: each line is checked and packed when the next one
 * starts (the last line is the trailer, known only at the end).
 *
 * Everything is checked before anything is written: a file that is cut short, edited or not an
 * export at all is a 400 naming the line at fault. The refusals come in the order a reader of the
 * whole file would give them: the header, then a missing last line, the counts, the digest, and
 * only then the first bad vector line (so an edited file says "changed", not "line 7 is wrong").
 */
export class SnapshotReader {
  private readonly digest = crypto.createHash('sha256');
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  /** Bytes of a line not yet ended by a newline. */
  private carry: Uint8Array[] = [];
  private carryBytes = 0;
  /** The last complete line (with its newline): a vector line, or the trailer if nothing follows. */
  private held: Uint8Array | undefined;
  /** Lines checked so far (the header is line 1). */
  private lines = 0;
  private header: (NewCollection & { vectorCount: number }) | undefined;
  private bytes = 0;
  /** The first bad vector line: reported once the trailer and the digest are found to be right. */
  private fault: Error | undefined;
  // The packed vectors.
  private n = 0;
  private values = new Float32Array(0);
  private readonly ids: string[] = [];
  private readonly tenants: string[] = [];
  private readonly properties: Properties[] = [];
  private readonly seen = new Set<string>();

  constructor(private readonly name: string | undefined) {}

  /** The next bytes of the file. */
  push(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength;
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start);
      if (nl < 0) break;
      let line = chunk.subarray(start, nl + 1);
      if (this.carry.length > 0) {
        this.carry.push(line);
        line = Buffer.concat(this.carry);
        this.carry = [];
        this.carryBytes = 0;
      }
      if (this.held) this.line(this.held);
      this.held = line;
      start = nl + 1;
    }
    // A copy: the rest of the chunk is not kept alive by a short tail.
    if (start < chunk.byteLength) {
      this.carry.push(chunk.slice(start));
      this.carryBytes += chunk.byteLength - start;
      if (this.carryBytes > MAX_LINE_BYTES) {
        throw damaged(this.lines + (this.held ? 2 : 1), `the line is longer than ${MAX_LINE_BYTES} bytes; an export's lines are far shorter`);
      }
    }
  }

  /** The end of the file: checks the trailer and the digest, and returns the packed collection. */
  end(): ImportBatch {
    if (this.bytes === 0) throw invalidArgument('the body is empty; send a file written by the export');
    let trailer: Uint8Array;
    if (this.carry.length > 0) {
      if (this.held) this.line(this.held);
      trailer = Buffer.concat(this.carry);
    } else {
      trailer = this.held!.subarray(0, this.held!.byteLength - 1);
    }
    this.carry = [];
    this.held = undefined;
    if (this.lines === 0) throw damaged(1, 'the file has a single line; an export has a header, its vectors and a last line');
    const header = this.header!;
    const at = this.lines + 1;
    const t = parseLine(this.decode(trailer, at), at);
    const vectorLines = this.lines - 1;
    if (t.end !== true || typeof t.sha256 !== 'string') {
      throw damaged(at, 'the file ends before its last line (no {"end": true, ...}); was it cut short?');
    }
    if (t.vector_count !== vectorLines || header.vectorCount !== vectorLines) {
      throw damaged(at, `the file has ${vectorLines} vector lines; its first line says ${header.vectorCount} and its last ${describeValue(t.vector_count)}`);
    }
    if (this.digest.digest('hex') !== t.sha256) throw damaged(at, 'the sha256 of the lines before the last one does not match: the file was changed or damaged');
    if (this.fault) throw this.fault;
    const dim = header.dimension;
    const values = this.values.length === this.n * dim ? this.values : this.values.slice(0, this.n * dim);
    this.values = new Float32Array(0);
    const { vectorCount: _count, ...collection } = header;
    return { collection: { ...collection, name: this.name ?? collection.name }, ids: this.ids, tenants: this.tenants, values, properties: this.properties };
  }

  private decode(bytes: Uint8Array, line: number): string {
    try {
      return this.decoder.decode(bytes);
    } catch {
      throw invalidArgument(`the export is damaged or not an export: it is not valid UTF-8 (line ${line})`);
    }
  }

  /** A line that is not the last one: the header or a vector. */
  private line(bytes: Uint8Array): void {
    this.digest.update(bytes);
    const line = ++this.lines;
    if (line === 1) {
      this.header = parseHeader(this.decode(bytes.subarray(0, bytes.byteLength - 1), 1));
      const rows = Math.min(this.header.vectorCount, Math.floor(MAX_RESERVED_BYTES / (this.header.dimension * 4)));
      this.values = new Float32Array(Math.max(1, rows) * this.header.dimension);
      return;
    }
    if (this.fault) return; // counted and hashed only: the file is refused at its end
    try {
      this.vector(bytes.subarray(0, bytes.byteLength - 1), line);
    } catch (err) {
      this.fault = err as Error;
      // What was packed is no longer needed.
      this.values = new Float32Array(0);
      this.ids.length = this.tenants.length = this.properties.length = 0;
      this.seen.clear();
    }
  }

  /** Checks one vector line as upsert checks a vector (snapshot rows came from upserts), and packs it. */
  private vector(bytes: Uint8Array, line: number): void {
    const header = this.header!;
    const dim = header.dimension;
    const bytesPerVector = dim * 4;
    const base64Length = 4 * Math.ceil(bytesPerVector / 3);
    const v = parseLine(this.decode(bytes, line), line);
    if (typeof v.id !== 'string') throw damaged(line, '"id" is not a string');
    const checked = (check: () => void) => {
      try {
        check();
      } catch (err) {
        throw damaged(line, (err as Error).message);
      }
    };
    const id = v.id;
    checked(() => checkId(id, 'id'));
    let tenant = '';
    if (header.multiTenant) {
      if (typeof v.tenant_id !== 'string') throw damaged(line, 'the collection is multi-tenant but "tenant_id" is not a string');
      const given = v.tenant_id;
      checked(() => checkTenant(given, 'tenant_id'));
      tenant = given;
    } else if (v.tenant_id !== undefined) throw damaged(line, 'the collection has no tenants but the line has a "tenant_id"');
    const key = `${tenant}\u0000${id}`;
    if (this.seen.has(key)) throw damaged(line, `the id "${id}" appears twice${header.multiTenant ? ` for tenant "${tenant}"` : ''}`);
    if (typeof v.values !== 'string' || v.values.length !== base64Length || !BASE64.test(v.values)) {
      throw damaged(line, `"values" is not ${dim} float32 values in base64 (${base64Length} characters)`);
    }
    const raw = Buffer.from(v.values, 'base64');
    if (raw.byteLength !== bytesPerVector) throw damaged(line, `"values" holds ${raw.byteLength} bytes; the collection has dimension ${dim} (${bytesPerVector} bytes)`);
    if ((this.n + 1) * dim > this.values.length) {
      const grown = new Float32Array(Math.max(this.values.length * 2, (this.n + 1) * dim));
      grown.set(this.values);
      this.values = grown;
    }
    // Into the next row, which counts only once the whole line is found right.
    const at = this.n * dim;
    new Uint8Array(this.values.buffer).set(raw, at * 4);
    for (let j = 0; j < dim; j++) {
      if (!Number.isFinite(this.values[at + j]!)) throw damaged(line, `"values"[${j}] is ${this.values[at + j]}; every value must be finite`);
    }
    if (!isPlainObject(v.properties)) throw damaged(line, '"properties" is not a JSON object');
    checked(() => checkPropertiesText(v.properties, 'properties'));
    this.n++;
    this.seen.add(key);
    this.ids.push(id);
    this.tenants.push(tenant);
    this.properties.push(v.properties);
  }
}

/** Checks a whole export held in memory (one chunk); see SnapshotReader. */
export function parseSnapshot(bytes: Uint8Array, name: string | undefined): ImportBatch {
  const reader = new SnapshotReader(name);
  reader.push(bytes);
  return reader.end();
}
